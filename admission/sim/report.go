package sim

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"
)

// Report is what a simulation shows, computed from a baseline run (everyone
// honest) and one run for each behaviour, identical otherwise.
type Report struct {
	// PreQueueRho is Spearman's rho between arrival and admission order in
	// the pre-queue: near 0 means arrival order does not matter.
	PreQueueRho float64
	// ArrivalRho is the same after the start: positive means later
	// arrivals are admitted later.
	ArrivalRho float64
	// WaitByDecile is the mean wait of each tenth of the post-start arrivals.
	WaitByDecile [10]time.Duration
	// Poller and Cheater compare the median admission time of those
	// visitors with the same visitors' median in the baseline.
	Poller, Cheater Paired
	// Multi is what holding k tokens in the pre-queue buys.
	Multi []MultiToken
	// Unadmitted counts visitors the simulation never admitted (should be 0).
	Unadmitted int
	Baseline   *Run
	Pollers    *Run
	Cheaters   *Run
}

// RunAll runs the baseline and one run for each behaviour, and analyses them.
func RunAll(ctx context.Context, cfg Config) (Report, error) {
	var runs [3]*Run
	for kind := range runs {
		r, err := Simulate(ctx, cfg, Kind(kind))
		if err != nil {
			return Report{}, fmt.Errorf("simulating %v run: %w", Kind(kind), err)
		}
		runs[kind] = r
	}
	return Analyse(runs[Honest], runs[Poller], runs[Cheater]), nil
}

// Paired compares one group's admissions in two runs.
type Paired struct {
	Visitors               int
	BaselineMedian, Median time.Duration
	// Change is Median/BaselineMedian - 1, measured from the sale start
	// for pre-queue visitors and from arrival otherwise.
	Change float64
	// Attempts and Polls per visitor of the group in the behaviour run.
	Attempts, Polls float64
}

// MultiToken is the effect of holding K pre-queue tokens at once.
type MultiToken struct {
	K int
	// Median admission time after the start of the best of K tokens.
	Median time.Duration
	// FirstDecile is the chance of being among the first 10% admitted.
	FirstDecile float64
	// Hashes is the expected proof-of-work cost of K tokens, in hashes, at
	// the gateway's default difficulty (the simulation itself uses less, to
	// run in minutes).
	Hashes float64
}

// Analyse computes the report.
func Analyse(baseline, pollers, cheaters *Run) Report {
	r := Report{Baseline: baseline, Pollers: pollers, Cheaters: cheaters}
	var preArrive, preAdmit, postArrive, postAdmit []float64
	var preAdmits []time.Duration
	var post []Visitor
	for _, v := range baseline.Visitors {
		if !v.Done {
			r.Unadmitted++
			continue
		}
		if v.PreQueue {
			preArrive = append(preArrive, v.Arrive.Seconds())
			preAdmit = append(preAdmit, v.Admitted.Seconds())
			preAdmits = append(preAdmits, v.Admitted)
		} else {
			postArrive = append(postArrive, v.Arrive.Seconds())
			postAdmit = append(postAdmit, v.Admitted.Seconds())
			post = append(post, v)
		}
	}
	r.PreQueueRho = Spearman(preArrive, preAdmit)
	r.ArrivalRho = Spearman(postArrive, postAdmit)
	sort.Slice(post, func(i, j int) bool { return post[i].Arrive < post[j].Arrive })
	for d := range 10 {
		part := post[d*len(post)/10 : (d+1)*len(post)/10]
		var sum time.Duration
		for _, v := range part {
			sum += v.Admitted - v.Arrive
		}
		if len(part) > 0 {
			r.WaitByDecile[d] = sum / time.Duration(len(part))
		}
	}
	r.Poller = pair(baseline, pollers, Poller)
	r.Cheater = pair(baseline, cheaters, Cheater)
	r.Multi = multi(preAdmits, baseline.Config)
	return r
}

func pair(baseline, behaviour *Run, kind Kind) Paired {
	var base, got []time.Duration
	var p Paired
	for i, v := range behaviour.Visitors {
		b := baseline.Visitors[i]
		if v.Kind != kind || !v.Done || !b.Done {
			continue
		}
		from := max(v.Arrive, 0)
		base = append(base, b.Admitted-from)
		got = append(got, v.Admitted-from)
		p.Attempts += float64(v.Attempts)
		p.Polls += float64(v.Polls)
	}
	p.Visitors = len(got)
	if p.Visitors == 0 {
		return p
	}
	p.Attempts /= float64(p.Visitors)
	p.Polls /= float64(p.Visitors)
	p.BaselineMedian, p.Median = median(base), median(got)
	p.Change = float64(p.Median)/float64(p.BaselineMedian) - 1
	return p
}

// GatewayDifficulty is the gateway's default proof-of-work difficulty, in
// bits, at which the cost of extra tokens is reported.
const GatewayDifficulty = 16

func multi(admits []time.Duration, cfg Config) []MultiToken {
	if len(admits) == 0 {
		return nil
	}
	sorted := slices.Clone(admits)
	slices.Sort(sorted)
	decile := sorted[len(sorted)/10]
	rng := rand.New(rand.NewPCG(cfg.Seed, 99))
	const samples = 20000
	var out []MultiToken
	for _, k := range []int{1, 2, 5, 10, 100} {
		best := make([]time.Duration, samples)
		first := 0
		for s := range samples {
			b := time.Duration(math.MaxInt64)
			for range k {
				b = min(b, admits[rng.IntN(len(admits))])
			}
			best[s] = b
			if b < decile {
				first++
			}
		}
		out = append(out, MultiToken{K: k, Median: median(best), FirstDecile: float64(first) / samples,
			Hashes: float64(k) * math.Exp2(GatewayDifficulty)})
	}
	return out
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// Spearman is the rank correlation of x and y (average ranks for ties).
func Spearman(x, y []float64) float64 {
	rx, ry := ranks(x), ranks(y)
	n := float64(len(x))
	if n < 2 {
		return 0
	}
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx, my = mx/n, my/n
	var sxy, sxx, syy float64
	for i := range rx {
		dx, dy := rx[i]-mx, ry[i]-my
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	return sxy / math.Sqrt(sxx*syy)
}

func ranks(x []float64) []float64 {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	r := make([]float64, len(x))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && x[idx[j+1]] == x[idx[i]] {
			j++
		}
		avg := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			r[idx[k]] = avg
		}
		i = j + 1
	}
	return r
}

// WriteTable writes the report as a text table a person can read.
func (r Report) WriteTable(w io.Writer) error {
	c := r.Baseline.Config
	var b strings.Builder
	fmt.Fprintf(&b, "fairgate sim: %d in the pre-queue over %v, %d arriving over %v after the start,\n", c.PreQueue, c.PreQueueSpan, c.Arrivals, c.ArrivalSpan)
	fmt.Fprintf(&b, "%.0f admissions/s, 0-%v network jitter, PoW %d bits, seed %d; sale lasted %v, %d never admitted\n\n",
		c.Rate, c.Jitter, c.Difficulty, c.Seed, r.Baseline.Duration.Round(time.Second), r.Unadmitted)
	check := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	fmt.Fprintf(&b, "%-58s %12s %6s\n", "claim", "measured", "")
	fmt.Fprintf(&b, "%-58s %12.4f %6s\n", "pre-queue: |Spearman rho| arrival vs admission < 0.02", r.PreQueueRho, check(math.Abs(r.PreQueueRho) < 0.02))
	fmt.Fprintf(&b, "%-58s %12.4f %6s\n", "after the start: later arrivals admitted later (rho > 0)", r.ArrivalRho, check(r.ArrivalRho > 0))
	fmt.Fprintf(&b, "%-58s %11.2f%% %6s\n", "refreshing 10x per backoff: median admission change", 100*r.Poller.Change, check(math.Abs(r.Poller.Change) < 0.01))
	fmt.Fprintf(&b, "%-58s %11.2f%% %6s\n", "ignoring nxt: median admission change (must be > 0)", 100*r.Cheater.Change, check(r.Cheater.Change > 0))
	fmt.Fprintf(&b, "\nmean wait by arrival decile after the start (the curve is memoryless:\n")
	fmt.Fprintf(&b, "everyone waiting has the same chance each second, so a wait follows the length\n")
	fmt.Fprintf(&b, "of the queue after arriving, and shrinks for the last arrivals as it drains):\n")
	for d, w := range r.WaitByDecile {
		fmt.Fprintf(&b, "  decile %2d  %8v\n", d+1, w.Round(time.Second))
	}
	fmt.Fprintf(&b, "\npaired with the same visitors when honest:\n")
	fmt.Fprintf(&b, "  %-8s %8s %12s %12s %10s %10s\n", "group", "visitors", "median then", "median now", "attempts", "refreshes")
	for _, g := range []struct {
		name string
		p    Paired
	}{{"poller", r.Poller}, {"cheater", r.Cheater}} {
		fmt.Fprintf(&b, "  %-8s %8d %12v %12v %10.1f %10.1f\n", g.name, g.p.Visitors,
			g.p.BaselineMedian.Round(time.Second), g.p.Median.Round(time.Second), g.p.Attempts, g.p.Polls)
	}
	fmt.Fprintf(&b, "\nholding k tokens in the pre-queue (one visitor, k solved challenges):\n")
	fmt.Fprintf(&b, "  %4s %14s %18s %22s\n", "k", "median admit", "P(first 10%)", "PoW hashes at 16 bits")
	for _, m := range r.Multi {
		fmt.Fprintf(&b, "  %4d %14v %17.1f%% %22.0f\n", m.K, m.Median.Round(time.Second), 100*m.FirstDecile, m.Hashes)
	}
	fmt.Fprintf(&b, "  (each token is a ticket: k tokens give k draws for k times the work and k\n")
	fmt.Fprintf(&b, "   identities; with identity configured, one session per user caps what they buy)\n")
	_, err := io.WriteString(w, b.String())
	return err
}
