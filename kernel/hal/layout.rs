//! Where the kernel image, the boot stacks and the heap live: the layout's constants and
//! arithmetic (crates/mem-layout, host-tested), and [`image`], which reads the section
//! boundaries of the running image from the linker script's symbols.

pub use beamcore_mem_layout::*;

/// The image layout of the running kernel, from the linker script's symbols.
pub fn image() -> ImageLayout {
    unsafe extern "C" {
        static __kernel_start: u8;
        static __text_end: u8;
        static __rodata_start: u8;
        static __rodata_end: u8;
        static __data_start: u8;
        static __data_end: u8;
        static __boot_stacks_start: u8;
        static __boot_stacks_end: u8;
        static __kernel_end: u8;
    }
    let addr = |symbol: *const u8| symbol as usize;
    ImageLayout {
        kernel_start: addr(&raw const __kernel_start),
        text_end: addr(&raw const __text_end),
        rodata_start: addr(&raw const __rodata_start),
        rodata_end: addr(&raw const __rodata_end),
        data_start: addr(&raw const __data_start),
        data_end: addr(&raw const __data_end),
        boot_stacks_start: addr(&raw const __boot_stacks_start),
        boot_stacks_end: addr(&raw const __boot_stacks_end),
        kernel_end: addr(&raw const __kernel_end),
    }
}
