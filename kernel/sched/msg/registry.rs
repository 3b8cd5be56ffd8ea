//! Registered names: `register`, `unregister`, `whereis`, and sending by name (Erlang's
//! `register/2`, `unregister/1`, `whereis/1`, `Name ! Message`).
//!
//! One table for the machine, a hash map from name to pid (hashbrown's swiss table with FNV-1a:
//! a lookup hashes the name once and probes a group of slots, independent of how many names
//! there are; `make bench BENCH=signals` measures it with 10,000 names registered), under one
//! lock that masks IRQs. A process's name is also kept in its `Relations`, so that its end frees
//! the name (`signals::on_end`): registering takes the table's lock, then the process's slot
//! lock, and checks the process is alive there; its end takes the name out under the slot lock
//! and then removes it from the table. Either the registration came first and the end removes
//! it, or the end came first and the registration fails with `NoProc`: no name outlives its
//! process.

use alloc::boxed::Box;
use alloc::string::String;
use core::fmt;

use fnv::FnvBuildHasher;
use hashbrown::HashMap;

use super::mailbox;
use super::signals::{self, lock_live};
use crate::proc::process::{Message, Pid, SendError};
use crate::run::percore::OnCore;
use beamcore_hal::sync::IrqSpinLock;
use beamcore_mm::heap::OutOfMemory;

/// The longest name accepted, in bytes.
pub const MAX_NAME_BYTES: usize = 255;

type Names = HashMap<Box<str>, Pid, FnvBuildHasher>;

static NAMES: IrqSpinLock<Option<Names>> = IrqSpinLock::new(None);

/// Why `register` or `unregister` failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegisterError {
    /// Another live process holds the name.
    NameTaken(Pid),
    /// The process has ended (or never existed).
    NoProc(Pid),
    /// The process is registered under another name already (a process has at most one).
    AlreadyRegistered(Pid),
    /// The name is empty or longer than [`MAX_NAME_BYTES`].
    BadName,
    /// No process is registered under the name (`unregister`).
    NotRegistered,
    /// No memory for the table or the name.
    OutOfMemory(OutOfMemory),
}

impl fmt::Display for RegisterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegisterError::NameTaken(pid) => write!(f, "register: the name is taken by {pid}"),
            RegisterError::NoProc(pid) => write!(f, "register: no process {pid}"),
            RegisterError::AlreadyRegistered(pid) => write!(f, "register: {pid} already has a name"),
            RegisterError::BadName => write!(f, "register: a name is 1 to {MAX_NAME_BYTES} bytes"),
            RegisterError::NotRegistered => write!(f, "unregister: no process has that name"),
            RegisterError::OutOfMemory(error) => write!(f, "register: {error}"),
        }
    }
}

impl From<OutOfMemory> for RegisterError {
    fn from(error: OutOfMemory) -> Self {
        RegisterError::OutOfMemory(error)
    }
}

/// A copy of `name` on the heap, or `OutOfMemory`.
fn boxed(name: &str) -> Result<Box<str>, OutOfMemory> {
    let mut copy = String::new();
    copy.try_reserve_exact(name.len()).map_err(|_| OutOfMemory { requested_bytes: name.len() })?;
    copy.push_str(name);
    Ok(copy.into_boxed_str())
}

/// Registers `pid` under `name`, for `whereis` and `send_named`, until it ends or the name is
/// unregistered.
pub fn register(name: &str, pid: Pid) -> Result<(), RegisterError> {
    if name.is_empty() || name.len() > MAX_NAME_BYTES {
        return Err(RegisterError::BadName);
    }
    // Allocated before any lock is taken (a name is short; the heap's lock is innermost anyway).
    let key = boxed(name)?;
    let copy = boxed(name)?;
    let _core = OnCore::enter();
    let mut table = NAMES.lock_irqs_masked();
    let names = table.get_or_insert_with(Names::default);
    if let Some(&holder) = names.get(name) {
        return Err(RegisterError::NameTaken(holder));
    }
    names.try_reserve(1).map_err(|_| OutOfMemory { requested_bytes: names.len() * 32 })?;
    let (_, mut shared) = lock_live(pid).ok_or(RegisterError::NoProc(pid))?;
    let relations = signals::relations(&mut shared)?;
    if relations.name.is_some() {
        return Err(RegisterError::AlreadyRegistered(pid));
    }
    relations.name = Some(copy);
    names.insert(key, pid);
    Ok(())
}

/// Removes `name` from the table; its process keeps running, without a name.
pub fn unregister(name: &str) -> Result<(), RegisterError> {
    let _core = OnCore::enter();
    let mut table = NAMES.lock_irqs_masked();
    let pid = table.as_mut().and_then(|names| names.remove(name)).ok_or(RegisterError::NotRegistered)?;
    if let Some((_, mut shared)) = lock_live(pid)
        && let Some(relations) = shared.relations.as_mut()
    {
        relations.name = None;
    }
    Ok(())
}

/// The process registered under `name`, if any.
pub fn whereis(name: &str) -> Option<Pid> {
    NAMES.lock().as_ref().and_then(|names| names.get(name).copied())
}

/// Sends `message` to the process registered under `name` (`SendError::NotRegistered` if none).
pub fn send_named(name: &str, message: Message) -> Result<(), SendError> {
    let pid = whereis(name).ok_or(SendError::NotRegistered)?;
    let mut core = OnCore::enter();
    let node = mailbox::new_node(&mut core, message).ok_or(SendError::OutOfMemory(pid))?;
    mailbox::send(&mut core, pid, node)
}

/// Names registered now.
pub fn registered_count() -> usize {
    NAMES.lock().as_ref().map_or(0, |names| names.len())
}

/// Frees `name` if `pid` (which has ended) still holds it.
pub(crate) fn forget(name: &str, pid: Pid) {
    let mut table = NAMES.lock();
    if let Some(names) = table.as_mut()
        && names.get(name) == Some(&pid)
    {
        names.remove(name);
    }
}
