//! The closure a new process runs, kept in its control block when it is small enough (no heap
//! allocation for the common spawn), boxed otherwise.

/// Bytes of closure a control block holds in place; a bigger closure is boxed on the heap.
const ENTRY_INLINE_BYTES: usize = 32;

/// The closure a new process runs. Small enough ones (up to [`ENTRY_INLINE_BYTES`], aligned
/// to at most 8) live in the control block itself, so spawning one allocates nothing on the
/// heap; others are boxed. Cleared unrun (the process was killed first), it drops the closure.
/// Written and taken in place: on the spawn path it is never moved whole.
pub(crate) struct Entry {
    /// Moves the closure out of `data` and runs it (`true`) or drops it (`false`); `None`
    /// when there is none.
    call: Option<unsafe fn(*mut u8, bool)>,
    data: core::mem::MaybeUninit<[u64; ENTRY_INLINE_BYTES / 8]>,
}

/// Runs (or drops) the `F` in `data`.
///
/// # Safety
/// `data` holds an `F` written by `Entry::put`, read here once.
unsafe fn call_in_place<F: FnOnce()>(data: *mut u8, run: bool) {
    // SAFETY: forwarded contract: the `F` is moved out and never read again.
    let function = unsafe { data.cast::<F>().read() };
    if run {
        function();
    }
}

impl Entry {
    pub(crate) const EMPTY: Entry = Entry { call: None, data: core::mem::MaybeUninit::uninit() };

    /// Whether an `F` is kept in place (else it must be boxed first).
    pub const fn fits<F>() -> bool {
        core::mem::size_of::<F>() <= ENTRY_INLINE_BYTES && core::mem::align_of::<F>() <= 8
    }

    /// Stores `function` (which [`fits`](Self::fits); a `Box<F>` always does), dropping any
    /// closure held before.
    pub fn put<F: FnOnce() + Send + 'static>(&mut self, function: F) {
        // A constant per `F`: the check costs nothing where it holds (spawn boxes the others).
        assert!(Self::fits::<F>(), "a closure that does not fit is boxed first");
        self.clear();
        // SAFETY: `data` has room and alignment for an `F` (asserted above).
        unsafe { self.data.as_mut_ptr().cast::<F>().write(function) };
        self.call = Some(call_in_place::<F>);
    }

    /// Whether the closure is still held: the process has not started.
    pub fn is_pending(&self) -> bool {
        self.call.is_some()
    }

    /// Takes the closure and runs it.
    pub fn run(&mut self) {
        if let Some(call) = self.call.take() {
            // SAFETY: `call` matches what `put` stored in `data`; taking it first means the
            // closure is read once.
            unsafe { call(self.data.as_mut_ptr().cast(), true) };
        }
    }

    /// Drops the closure unrun, if one is held.
    pub fn clear(&mut self) {
        if let Some(call) = self.call.take() {
            // SAFETY: as in `run`.
            unsafe { call(self.data.as_mut_ptr().cast(), false) };
        }
    }
}
