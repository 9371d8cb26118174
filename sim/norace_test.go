//go:build !race

package sim

const raceScale = 1
