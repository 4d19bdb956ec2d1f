//go:build race

package main

// raceEnabled: the test binary runs with -race, so the servers of the short
// run are built with -race too (the packages are in the build cache
// already), and a data race in them fails the run.
const raceEnabled = true
