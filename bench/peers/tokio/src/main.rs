//! beamcore's scheduler micro-benchmarks (apps/bench/sched.rs) written for Tokio, run by
//! scripts/peers.py as `peers-tokio <bench> <n>` on the current-thread runtime: n rounds of one
//! benchmark, then exit. The script counts the whole run's instructions at two values of n and
//! takes the difference, so start-up and exit cancel out.
//!
//! - `yield`: two tasks each call `tokio::task::yield_now()` n times (2n yields).
//! - `hop`: a pinger and an echo task exchange n round trips of a `u64` over two `mpsc`
//!   channels (2n hops).
//! - `spawn_exit`: n times, spawn a task that returns at once and await its `JoinHandle`.

use tokio::sync::mpsc;

async fn yield_bench(n: u64) {
    let yielder = move || async move {
        for _ in 0..n {
            tokio::task::yield_now().await;
        }
    };
    let a = tokio::spawn(yielder());
    let b = tokio::spawn(yielder());
    a.await.expect("yielder");
    b.await.expect("yielder");
}

async fn hop_bench(n: u64) {
    let (ping_tx, mut ping_rx) = mpsc::unbounded_channel::<u64>();
    let (pong_tx, mut pong_rx) = mpsc::unbounded_channel::<u64>();
    let echo = tokio::spawn(async move {
        for _ in 0..n {
            let word = ping_rx.recv().await.expect("ping");
            pong_tx.send(word).expect("pong");
        }
    });
    let pinger = tokio::spawn(async move {
        for word in 0..n {
            ping_tx.send(word).expect("ping");
            pong_rx.recv().await.expect("pong");
        }
    });
    pinger.await.expect("pinger");
    echo.await.expect("echo");
}

async fn spawn_exit_bench(n: u64) {
    for _ in 0..n {
        tokio::spawn(async {}).await.expect("child");
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(bench), Some(Ok(n))) = (args.get(1), args.get(2).map(|s| s.parse::<u64>())) else {
        eprintln!("usage: peers-tokio yield|hop|spawn_exit ROUNDS");
        std::process::exit(2);
    };
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    match bench.as_str() {
        "yield" => runtime.block_on(yield_bench(n)),
        "hop" => runtime.block_on(hop_bench(n)),
        "spawn_exit" => runtime.block_on(spawn_exit_bench(n)),
        other => {
            eprintln!("unknown benchmark {other}");
            std::process::exit(2);
        }
    }
}
