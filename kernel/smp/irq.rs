//! The IRQ handler: what each interrupt a core acknowledges means (its tick, a timer deadline,
//! an SGI). Only the dispatch lives here; what each case does is in the file of its concern.

use core::sync::atomic::Ordering;

use super::handlers::HANDLERS;
use super::percore::CORES;
use super::sgi::on_ping;
use super::tick::{advance_tick, arm};
use super::watchdog::check_watchdog;
use super::{Sgi, gic, halt_this_core};
use crate::arch::cpu;
use crate::arch::exception::TrapFrame;
use crate::arch::timer;

/// The IRQ handler (called from the exception vector with IRQs masked).
pub fn handle_irq(_frame: &mut TrapFrame) {
    let me = &CORES[cpu::core_id()];
    let gic = gic();
    while let Some(irq) = gic.acknowledge() {
        me.irqs.fetch_add(1, Ordering::Relaxed);
        match irq.intid {
            timer::TIMER_INTID => {
                let now = cpu::counter();
                // ORDERING: Relaxed: the core's own value.
                let tick_due = now >= me.next_tick.load(Ordering::Relaxed);
                if tick_due {
                    me.ticks.fetch_add(1, Ordering::Relaxed);
                    advance_tick(me, now);
                }
                if let Some(handlers) = HANDLERS.get() {
                    // Timers first, so a process they wake is queued before a slice ends.
                    (handlers.timers)();
                }
                // Ends with an ISB, so the new compare value is in force before the EOI below.
                arm(me);
                if tick_due {
                    if cpu::core_id() == 0 {
                        check_watchdog(_frame);
                    }
                    // May end the running process's slice: the frame then returns to the
                    // scheduler.
                    if let Some(handlers) = HANDLERS.get() {
                        (handlers.tick)(_frame);
                    }
                }
            }
            id if id == Sgi::Wake as u32 => {}
            id if id == Sgi::Ping as u32 => on_ping(me),
            id if id == Sgi::Halt as u32 => {
                gic.end_of_interrupt(irq);
                halt_this_core();
            }
            _ => {
                me.unexpected_irqs.fetch_add(1, Ordering::Relaxed);
            }
        }
        gic.end_of_interrupt(irq);
    }
}
