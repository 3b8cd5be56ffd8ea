//! Ending a run: QEMU's semihosting exit with a status, or, on real hardware, parking.
//!
//! The semihosting trap (`hlt #0xf000`) faults on a board without a debugger, so it is only
//! compiled in with the `semihosting` feature (on for QEMU builds, off for the Pi image, where
//! `make rpi4` checks that the image holds no such instruction). Without it, the run ends with
//! every core parked: the others are sent the `Halt` SGI (they stop scheduling and park), then
//! this core prints the final line and parks too.

/// What a beamcore program returns to the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitCode {
    Success,
    /// Exit with this status (QEMU's exit status; 1 for a failed test).
    Failure(u32),
}

/// Ends the run with `code`. Prints nothing; callers print their results first.
pub fn exit(code: ExitCode) -> ! {
    crate::console::flush();
    let status = match code {
        ExitCode::Success => 0,
        ExitCode::Failure(status) => status.max(1),
    };
    #[cfg(feature = "semihosting")]
    {
        use qemu_exit::QEMUExit;
        qemu_exit::AArch64::new().exit(status)
    }
    #[cfg(not(feature = "semihosting"))]
    {
        let (parked, asked) = crate::smp::halt_other_cores();
        if parked == asked {
            crate::console::write_final(format_args!("halted with status {status}; all {} cores parked\n", asked + 1));
        } else {
            crate::console::write_final(format_args!(
                "halted with status {status}; {} of {} other cores did not park\n",
                asked - parked,
                asked
            ));
        }
        crate::smp::halt_this_core()
    }
}

/// Calls a program's entry point. `entry!` calls `main` through this function, not through a
/// `fn() -> ExitCode` pointer, so that a `main` of another type is reported at `main` itself
/// and in its own terms: "expected `main` to return `ExitCode`, but it returns `()`", or "takes 1
/// argument" (a pointer would give "mismatched types: expected fn pointer, found fn item").
#[doc(hidden)]
#[inline(always)]
pub fn call_entry<F: FnOnce() -> ExitCode>(main: F) -> ExitCode {
    main()
}

/// Names a program's entry point: `fn() -> beamcore::ExitCode`, called on the boot core once
/// every core is online. The kernel exits with the status it returns. A program with bootargs
/// of its own names them too, as a `static` [`crate::config::ProgramArgs`]: the kernel parses
/// them at boot with its own (module [`crate::config`] says how).
///
/// ```ignore
/// fn main() -> beamcore::ExitCode { beamcore::println!("hello"); beamcore::ExitCode::Success }
/// beamcore::entry!(main);
/// // or, with settings: beamcore::entry!(main, settings = my_program::ARGS);
/// ```
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        $crate::entry!($main, settings = $crate::config::NO_PROGRAM_SETTINGS);
    };
    ($main:path, settings = $settings:path) => {
        #[unsafe(no_mangle)]
        pub extern "Rust" fn __beamcore_main() -> $crate::ExitCode {
            $crate::exit::call_entry($main)
        }

        // Named for the one message a second `entry!` in another crate gets from a release
        // build: LTO merges the crates before the linker (and its hints) runs, and reports
        // only "Linking globals named '<this name>': symbol multiply defined!".
        #[unsafe(no_mangle)]
        pub static BEAMCORE_ENTRY__ONE_PER_PROGRAM__NOT_IN_A_LIBRARY: &'static dyn $crate::config::ProgramSettings =
            &$settings;
    };
}
