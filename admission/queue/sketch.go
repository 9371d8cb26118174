package queue

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// A pass presented to several nodes within the window is in each node's
// active set (admission.ActiveSet), so the sum of the nodes' counts counts it once per node. A
// Sketch counts distinct passes instead: each node sketches its own active
// passes, and the union's count is the count of the sketches merged, whose
// size does not grow with the passes.

// sketchPrecision is log2 of a Sketch's registers: 8,192 registers, a
// relative standard error of 1.04/sqrt(8192) ≈ 1.15% on the count of
// distinct passes, in sketchSize bytes. 4,096 (1.6%) let a three-node
// simulation without affinity reach +5% (TestCapacityHoldsTheSiteAtCapacity).
const sketchPrecision = 13

const sketchRegisters = 1 << sketchPrecision

// sketchVersion heads a marshalled Sketch, so a node reading another's
// sketch of another layout refuses it rather than misreads it.
const sketchVersion = 1

// sketchSize is a marshalled Sketch's length in bytes.
const sketchSize = 2 + sketchRegisters

// SketchError is a Sketch's relative standard error on a count.
var SketchError = 1.04 / math.Sqrt(sketchRegisters)

// Sketch is a HyperLogLog sketch of a set of pass ids: it estimates how
// many distinct ids were added, within SketchError (one standard error),
// and two sketches merge into the sketch of their sets' union. Every node
// hashes an id alike, so sketches made on different nodes merge. The zero
// value is an empty sketch.
type Sketch struct {
	reg [sketchRegisters]uint8
}

// add adds pass id.
func (s *Sketch) add(id string) { s.AddHash(SketchHash(id)) }

// AddHash adds the id whose SketchHash is h: a caller adding an id
// often hashes it once.
func (s *Sketch) AddHash(h uint64) {
	i := h >> (64 - sketchPrecision)
	rank := uint8(min(bits.LeadingZeros64(h<<sketchPrecision), 64-sketchPrecision) + 1)
	s.reg[i] = max(s.reg[i], rank)
}

// SketchHash is a 64-bit hash of id that is the same on every node:
// FNV-1a, whose low-entropy high bits a finaliser (splitmix64's) spreads.
func SketchHash(id string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// Merge makes s the sketch of its set's union with o's.
func (s *Sketch) Merge(o *Sketch) {
	for i, r := range o.reg {
		s.reg[i] = max(s.reg[i], r)
	}
}

// Estimate is the number of distinct ids added. It is Ertl's improved
// estimator ("New cardinality estimation algorithms for HyperLogLog
// sketches", 2017), unbiased from an empty sketch to billions of ids
// without the bias tables or range switches of the original.
func (s *Sketch) Estimate() float64 {
	const q = 64 - sketchPrecision
	var hist [q + 2]float64
	for _, r := range s.reg {
		hist[r]++
	}
	m := float64(sketchRegisters)
	z := m * sketchTau(1-hist[q+1]/m)
	for k := q; k >= 1; k-- {
		z = 0.5 * (z + hist[k])
	}
	z += m * sketchSigma(hist[0]/m)
	return m * m / (2 * math.Ln2) / z
}

func sketchSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += x * y
		y += y
		if z == prev {
			return z
		}
	}
}

func sketchTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if z == prev {
			return z / 3
		}
	}
}

// MarshalBinary is s in sketchSize bytes: a version, the precision, one
// byte a register.
func (s *Sketch) MarshalBinary() ([]byte, error) {
	out := make([]byte, 0, sketchSize)
	out = append(out, sketchVersion, sketchPrecision)
	return append(out, s.reg[:]...), nil
}

// errSketch is a marshalled sketch this build cannot read.
var errSketch = errors.New("not a sketch of this layout")

// UnmarshalBinary sets s from MarshalBinary's form.
func (s *Sketch) UnmarshalBinary(data []byte) error {
	if len(data) != sketchSize || data[0] != sketchVersion || data[1] != sketchPrecision {
		return fmt.Errorf("%w: %d bytes", errSketch, len(data))
	}
	for i, r := range data[2:] {
		if r > 64-sketchPrecision+1 {
			return fmt.Errorf("%w: register %d is %d", errSketch, i, r)
		}
		s.reg[i] = r
	}
	return nil
}
