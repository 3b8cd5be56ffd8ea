// beamcore's scheduler micro-benchmarks (apps/bench/sched.rs) written for Go, run by
// scripts/peers.py as `GOMAXPROCS=1 peers-go <bench> <n>`: n rounds of one benchmark, then exit.
// The script counts the whole run's instructions at two values of n and takes the difference,
// so start-up and exit cancel out.
//
//	yield       two goroutines each call runtime.Gosched() n times (2n yields)
//	hop         a pinger and an echo goroutine exchange n round trips of an int over two
//	            unbuffered channels (2n hops)
//	spawn_exit  n times: start a goroutine that returns at once and wait for it (sync.WaitGroup)
package main

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
)

func yield(n int) {
	var wg sync.WaitGroup
	wg.Add(2)
	for i := 0; i < 2; i++ {
		go func() {
			for j := 0; j < n; j++ {
				runtime.Gosched()
			}
			wg.Done()
		}()
	}
	wg.Wait()
}

func hop(n int) {
	ping, pong := make(chan int), make(chan int)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // echo
		for j := 0; j < n; j++ {
			pong <- <-ping
		}
		wg.Done()
	}()
	go func() { // pinger
		for j := 0; j < n; j++ {
			ping <- j
			<-pong
		}
		wg.Done()
	}()
	wg.Wait()
}

func spawnExit(n int) {
	var wg sync.WaitGroup
	for j := 0; j < n; j++ {
		wg.Add(1)
		go func() { wg.Done() }()
		wg.Wait()
	}
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: peers-go yield|hop|spawn_exit ROUNDS")
		os.Exit(2)
	}
	n, err := strconv.Atoi(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	runtime.GOMAXPROCS(1)
	switch os.Args[1] {
	case "yield":
		yield(n)
	case "hop":
		hop(n)
	case "spawn_exit":
		spawnExit(n)
	default:
		fmt.Fprintln(os.Stderr, "unknown benchmark", os.Args[1])
		os.Exit(2)
	}
}
