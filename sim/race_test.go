//go:build race

package sim

// raceScale shrinks TestFairness under the race detector, which makes every
// request about ten times slower; the scenario keeps its shape.
const raceScale = 3
