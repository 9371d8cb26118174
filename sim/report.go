package sim

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fairgate/fairgate/room"
)

// Report is what a simulation shows, from a baseline run (everyone honest)
// and a run in which some visitors play each strategy, identical otherwise.
type Report struct {
	// PreQueueRho is Spearman's rho between arrival and admission order in
	// the pre-queue: near 0 means arrival order does not matter.
	PreQueueRho float64
	// PreQueueLotRho is rho between lottery number and admission order in
	// the pre-queue: near 1 means the draw alone decides it.
	PreQueueLotRho float64
	// PreQueueFirst is the share of post-start arrivals admitted after the
	// pre-queue's last admission.
	PreQueueFirst float64
	// PreQueueOvertake is the most by which a post-start arrival was
	// admitted before the pre-queue's last place (zero if none was).
	PreQueueOvertake time.Duration
	// EarlierFirst is, for arrivals after the start about Delta apart, the
	// share of pairs in which the earlier one was admitted first, and
	// fifo's promise for it: 1 − ½·e^(−Δ/W).
	EarlierFirst []OrderPoint
	// RateNonEmpty is the admission rate per 10-second window over the
	// windows in which the queue was never empty, the drain included.
	RateNonEmpty struct{ Min, Mean, Max float64 }
	// ArrivalRho is the same after the start: positive means later
	// arrivals are admitted later.
	ArrivalRho float64
	// WaitByDecile is the mean wait of each tenth of the post-start arrivals.
	WaitByDecile [10]time.Duration
	// Waits are the median, 90th and 99th percentile waits of the
	// baseline's pre-queue (from the start) and later arrivals (from
	// arrival): what a queue order costs.
	PreQueueWaits, ArrivalWaits [3]time.Duration
	// RateHeld is the admission rate over each 10-second window in which
	// at least 10 seconds' worth of admissions were waiting throughout, as
	// shares of the target: the lowest, the mean and the highest.
	RateHeld struct{ Min, Mean, Max float64 }
	// Strategies compares each strategy's visitors with their honest twins.
	Strategies []Paired
	// Controls is the first control group's row ("honest, control") of
	// each distinct run of Strategies, in their order: honest visitors
	// drawn as a strategy's are, paired with themselves in the baseline.
	Controls []Paired
	// Unadmitted counts visitors the baseline never admitted (should be 0).
	Unadmitted int
	// Expired counts tokens that expired under visitors following the page
	// (honest, in both runs): each is a lost place, and should be 0.
	Expired int
	// Lanes are the baseline's waits by lane, when the sale had lanes.
	Lanes    []LaneWaits
	Baseline *Run
	// Runs holds one run per strategy, indexed by Kind (Runs[Honest] is
	// the baseline).
	Runs []*Run
}

// RunAll runs the baseline and one run per strategy (or, with cfg.Mixed,
// one run of every strategy at once), cfg.Parallel at a time, and analyses
// them.
func RunAll(ctx context.Context, cfg Config) (Report, error) {
	var strategies []Kind
	for k := FastRetrier; k < kinds; k++ {
		if len(cfg.Only) == 0 || slices.Contains(cfg.Only, k) {
			strategies = append(strategies, k)
		}
	}
	type job struct{ active Kind }
	jobs := []job{{Honest}}
	switch {
	case cfg.Mixed && len(strategies) > 0:
		jobs = append(jobs, job{everyStrategy})
	case !cfg.Mixed:
		for _, k := range strategies {
			jobs = append(jobs, job{k})
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]*Run, len(jobs))
	errs := make([]error, len(jobs))
	sem := make(chan struct{}, max(cfg.Parallel, 1))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			r, err := Simulate(ctx, cfg, j.active)
			if err != nil {
				errs[i] = fmt.Errorf("simulating %s run: %w", runName(j.active), err)
				cancel()
				return
			}
			results[i] = r
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Report{}, err
	}
	runs := make([]*Run, kinds)
	for i, j := range jobs {
		if j.active == everyStrategy {
			for _, k := range strategies {
				runs[k] = results[i]
			}
			continue
		}
		runs[j.active] = results[i]
	}
	return Analyse(runs), nil
}

// LaneWaits are the waits of one lane's visitors (from the sale start for
// the pre-queue, from arrival otherwise).
type LaneWaits struct {
	// Lane is the lane's name, "" for the default lane.
	Lane             string
	Visitors         int
	Median, P90, Max time.Duration
}

// laneWaits groups the admitted visitors of run by lane, default first.
func laneWaits(run *Run) []LaneWaits {
	waits := map[string][]time.Duration{}
	for _, v := range run.Visitors {
		if v.Done {
			waits[v.Lane] = append(waits[v.Lane], v.Admitted-max(v.Arrive, 0))
		}
	}
	if len(waits) < 2 && waits[""] != nil {
		return nil
	}
	lanes := make([]string, 0, len(waits))
	for l := range waits {
		lanes = append(lanes, l)
	}
	slices.Sort(lanes)
	var out []LaneWaits
	for _, l := range lanes {
		d := waits[l]
		slices.Sort(d)
		out = append(out, LaneWaits{Lane: l, Visitors: len(d), Median: quantile(d, 0.5), P90: quantile(d, 0.9), Max: d[len(d)-1]})
	}
	return out
}

// Paired compares one strategy's visitors with the same visitors honest.
type Paired struct {
	Kind     Kind
	Visitors int
	// Medians and 90th percentiles of the wait (from the sale start for
	// the pre-queue, from arrival otherwise), as honest twins and as
	// players of the strategy.
	TwinMedian, Median, TwinP90, P90 time.Duration
	// MaxGain is the most any visitor was admitted before its twin, MaxLoss
	// the most after.
	MaxGain, MaxLoss time.Duration
	// MaxLossBeyondLate is, for a late presenter, the most any lost
	// against its twin beyond its own lateness: how late it was for the
	// counted requests its twin needed too (Visitor.Counted, Late). A
	// request the gateway made it send that its twin did not (told to come
	// back at once, say) is the gateway's cost, not the client's.
	MaxLossBeyondLate time.Duration
	// Requests and Hashes per visitor of the strategy.
	Requests, Hashes float64
	// Noise is the most an honest visitor of the same run moved against
	// itself in the baseline: what the strategy changed for everyone.
	Noise time.Duration
	// Control is how far the run's control groups moved their medians
	// and p90s against their twins': the noise for a group's figures.
	Control Control
}

// Control is how the control groups of a run moved against themselves in
// the baseline. A control group is the honest visitors whose kind draw fell
// in one band of width Share beyond the strategies' seven (Visitor.Control):
// as many, chosen the same way, as a strategy's visitors, so with no gain a
// strategy's group is one more such group, and its shift is as likely as
// any group's to be the lowest (docs/FAIRNESS.md, "The control groups").
type Control struct {
	// Groups is the number of control groups in the run.
	Groups int
	// Median and P90 are the shifts of the groups' medians and p90s
	// against their twins' (Shift: −0.01 is 1% earlier): the 1st
	// percentile (controlFloor; the lowest, below 100 groups) and the
	// highest.
	Median, P90 [2]float64
}

// Shift is got against twin as a ratio less one: −0.01 is 1% earlier.
func Shift(got, twin time.Duration) float64 {
	if twin <= 0 {
		return 0
	}
	return float64(got)/float64(twin) - 1
}

// Gains reports whether the strategy did better than its twins: median or
// p90 more than 1% earlier, or anyone more than a second earlier.
func (p Paired) Gains() bool {
	return float64(p.Median) < 0.99*float64(p.TwinMedian) || float64(p.P90) < 0.99*float64(p.TwinP90) ||
		p.MaxGain > time.Second
}

// GroupGains reports whether the strategy's median or p90 is more than 1%
// earlier than its twins' and also shifted further ahead than all but 1% of
// the control groups of the same run (Control; with no control group, the
// 1% alone). With a
// fixed clock the control groups do not move, so it is the 1% rule; with an
// adaptive one, a group shift that some honest group of the same size and
// selection matched is the run's movement, not the strategy's gain.
func (p Paired) GroupGains() bool {
	median := float64(p.Median) < 0.99*float64(p.TwinMedian)
	p90 := float64(p.P90) < 0.99*float64(p.TwinP90)
	if p.Control.Groups > 0 {
		median = median && Shift(p.Median, p.TwinMedian) < p.Control.Median[0]
		p90 = p90 && Shift(p.P90, p.TwinP90) < p.Control.P90[0]
	}
	return median || p90
}

// verdict names the row's outcome: "gains nothing" when Gains does not hold
// (the raw rule); otherwise "within noise" when no single visitor gained
// more than the run's noise (plus the rule's second) and GroupGains does
// not hold, and "GAINS" when either beats the noise. With an adaptive clock
// every visitor of a strategy's run may move by up to the noise, and every
// group's median and p90 by as much as its control groups'.
func (p Paired) verdict() string {
	switch {
	case !p.Gains():
		return "gains nothing"
	case p.Kind == AnonTokens:
		return "gains, for k proofs of work"
	case !p.GroupGains() && p.MaxGain <= p.Noise+time.Second:
		return "within noise"
	}
	return "GAINS"
}

// controlVerdict is the control row's last column: the range of its run's
// control groups' shifts.
func (p Paired) controlVerdict() string {
	c := p.Control
	return fmt.Sprintf("control: %d groups, median %+.2f … %+.2f%%, p90 %+.2f … %+.2f%%", c.Groups,
		100*c.Median[0], 100*c.Median[1], 100*c.P90[0], 100*c.P90[1])
}

// Analyse computes the report from the runs RunAll made.
func Analyse(runs []*Run) Report {
	baseline := runs[Honest]
	r := Report{Baseline: baseline, Runs: runs}
	var preArrive, preAdmit, postArrive, postAdmit []float64
	var post []Visitor
	for _, v := range baseline.Visitors {
		r.Expired += v.Expired
		if !v.Done {
			r.Unadmitted++
			continue
		}
		if v.PreQueue {
			preArrive = append(preArrive, v.Arrive.Seconds())
			preAdmit = append(preAdmit, v.Admitted.Seconds())
		} else {
			postArrive = append(postArrive, v.Arrive.Seconds())
			postAdmit = append(postAdmit, v.Admitted.Seconds())
			post = append(post, v)
		}
	}
	for _, run := range distinct(runs[FastRetrier:]) {
		for _, v := range run.Visitors {
			if v.Kind == Honest {
				r.Expired += v.Expired
			}
		}
	}
	r.PreQueueRho = Spearman(preArrive, preAdmit)
	var preWaits, postWaits []time.Duration
	for _, v := range baseline.Visitors {
		switch {
		case !v.Done:
		case v.PreQueue:
			preWaits = append(preWaits, v.Admitted)
		default:
			postWaits = append(postWaits, v.Admitted-v.Arrive)
		}
	}
	for i, q := range []float64{0.5, 0.9, 0.99} {
		if len(preWaits) > 0 {
			r.PreQueueWaits[i] = quantile(preWaits, q)
		}
		if len(postWaits) > 0 {
			r.ArrivalWaits[i] = quantile(postWaits, q)
		}
	}
	var preLot []float64
	lastPre := time.Duration(math.MinInt64)
	for _, v := range baseline.Visitors {
		if v.Done && v.PreQueue {
			preLot = append(preLot, v.Lot)
			lastPre = max(lastPre, v.Admitted)
		}
	}
	r.PreQueueLotRho = Spearman(preLot, preAdmit)
	after := 0
	for _, v := range post {
		if v.Admitted > lastPre {
			after++
			continue
		}
		r.PreQueueOvertake = max(r.PreQueueOvertake, lastPre-v.Admitted)
	}
	if len(post) > 0 {
		r.PreQueueFirst = float64(after) / float64(len(post))
	}
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
	luck := baseline.Config.Luck()
	for _, delta := range []time.Duration{100 * time.Millisecond, luck, 5 * luck} {
		r.EarlierFirst = append(r.EarlierFirst, earlierFirst(post, delta, luck))
	}
	r.RateHeld.Min, r.RateHeld.Mean, r.RateHeld.Max = rateHeld(baseline, baseline.Config.Rate*10)
	r.RateNonEmpty.Min, r.RateNonEmpty.Mean, r.RateNonEmpty.Max = rateHeld(baseline, 1)
	r.Lanes = laneWaits(baseline)
	var last *Run
	for k := FastRetrier; k < kinds; k++ {
		if runs[k] == nil {
			continue
		}
		p := pair(baseline, runs[k], k)
		r.Strategies = append(r.Strategies, p)
		if runs[k] != last {
			last = runs[k]
			c := pairWith(baseline, runs[k], Honest, func(v Visitor) bool { return v.Kind == Honest && v.Control == 1 })
			c.Control = p.Control
			r.Controls = append(r.Controls, c)
		}
	}
	return r
}

// OrderPoint is how often the earlier of two arrivals Delta apart went first.
type OrderPoint struct {
	Delta time.Duration
	// Share of Pairs in which the earlier arrival was admitted first (ties
	// count half); Want is fifo's 1 − ½·e^(−Δ/W).
	Share, Want float64
	Pairs       int
}

// earlierFirst pairs each arrival (sorted by arrival) with the next one
// arriving at least delta later, if it arrived within a tenth more.
func earlierFirst(post []Visitor, delta, luck time.Duration) OrderPoint {
	p := OrderPoint{Delta: delta, Want: 1 - 0.5*math.Exp(-delta.Seconds()/luck.Seconds())}
	first := 0.0
	j := 0
	for i := range post {
		for j < len(post) && post[j].Arrive-post[i].Arrive < delta {
			j++
		}
		if j == len(post) {
			break
		}
		if post[j].Arrive-post[i].Arrive > delta*11/10 {
			continue
		}
		p.Pairs++
		switch {
		case post[i].Admitted < post[j].Admitted:
			first++
		case post[i].Admitted == post[j].Admitted:
			first += 0.5
		}
	}
	if p.Pairs > 0 {
		p.Share = first / float64(p.Pairs)
	}
	return p
}

// rateHeld measures the admission rate against the target over 10-second
// windows during which the queue never held fewer than least visitors.
func rateHeld(run *Run, least float64) (lo, mean, hi float64) {
	windows := rateWindows(run, least)
	if len(windows) == 0 {
		return 0, 0, 0
	}
	lo, hi = math.Inf(1), 0
	for _, got := range windows {
		lo, hi, mean = math.Min(lo, got), math.Max(hi, got), mean+got
	}
	return lo, mean / float64(len(windows)), hi
}

// rateWindows is the admission rate, as a share of the target, of each
// 10-second window from the start in which at least least admissions were
// waiting throughout, in order.
func rateWindows(run *Run, least float64) []float64 {
	const window = 10 * time.Second
	rate := run.Config.Rate
	var arrive, admit []time.Duration
	for _, v := range run.Visitors {
		arrive = append(arrive, max(v.Arrive, 0))
		if v.Done {
			admit = append(admit, v.Admitted)
		}
	}
	slices.Sort(arrive)
	slices.Sort(admit)
	count := func(ts []time.Duration, t time.Duration) int { // how many are <= t
		i, _ := slices.BinarySearch(ts, t+1)
		return i
	}
	var windows []float64
	for t := time.Duration(0); t+window <= run.Duration; t += window {
		// Waiting at the window's end is the least it held: arrivals
		// only add and the window's admissions are already out.
		if float64(count(arrive, t)-count(admit, t+window)) < least {
			continue
		}
		windows = append(windows, float64(count(admit, t+window)-count(admit, t))/window.Seconds()/rate)
	}
	return windows
}

// pair compares kind's visitors in mixed with their twins in baseline, with
// the run's noise and its control groups' shifts.
func pair(baseline, mixed *Run, kind Kind) Paired {
	p := pairWith(baseline, mixed, kind, func(v Visitor) bool { return v.Kind == kind })
	p.Control = controls(baseline, mixed)
	return p
}

// controls measures how each control group of mixed moved its median and
// p90 against its twins in baseline.
func controls(baseline, mixed *Run) Control {
	twins, gots := map[int][]time.Duration{}, map[int][]time.Duration{}
	for i, v := range mixed.Visitors {
		b := baseline.Visitors[i]
		if v.Kind != Honest || v.Control == 0 || !v.Done || !b.Done {
			continue
		}
		from := max(v.Arrive, 0)
		twins[v.Control] = append(twins[v.Control], b.Admitted-from)
		gots[v.Control] = append(gots[v.Control], v.Admitted-from)
	}
	var medians, p90s []float64
	for g, got := range gots {
		twin := twins[g]
		medians = append(medians, Shift(quantile(got, 0.5), quantile(twin, 0.5)))
		p90s = append(p90s, Shift(quantile(got, 0.9), quantile(twin, 0.9)))
	}
	c := Control{Groups: len(gots)}
	if c.Groups == 0 {
		return c
	}
	slices.Sort(medians)
	slices.Sort(p90s)
	floor := int(controlFloor * float64(c.Groups))
	c.Median = [2]float64{medians[floor], medians[c.Groups-1]}
	c.P90 = [2]float64{p90s[floor], p90s[c.Groups-1]}
	return c
}

// controlFloor is the share of control groups a strategy's group must do
// better than all but to be a gain: with no gain it does so by chance once
// in a hundred rows (with fewer than 100 groups, it must beat them all).
const controlFloor = 0.01

// pairWith compares the visitors of mixed that match with their twins in
// baseline (as kind's row), and measures the run's noise.
func pairWith(baseline, mixed *Run, kind Kind, match func(Visitor) bool) Paired {
	p := Paired{Kind: kind}
	var twin, got []time.Duration
	for i, v := range mixed.Visitors {
		b := baseline.Visitors[i]
		if !v.Done || !b.Done {
			continue
		}
		if v.Kind == Honest {
			p.Noise = max(p.Noise, v.Admitted-b.Admitted, b.Admitted-v.Admitted)
		}
		if !match(v) {
			continue
		}
		from := max(v.Arrive, 0)
		twin = append(twin, b.Admitted-from)
		got = append(got, v.Admitted-from)
		p.MaxGain = max(p.MaxGain, b.Admitted-v.Admitted)
		p.MaxLoss = max(p.MaxLoss, v.Admitted-b.Admitted)
		if v.Kind == LatePresenter {
			p.MaxLossBeyondLate = max(p.MaxLossBeyondLate, v.Admitted-b.Admitted-lateFor(v.Late, b.Counted))
		}
		p.Requests += float64(v.Requests)
		p.Hashes += float64(v.Hashes)
	}
	p.Visitors = len(got)
	if p.Visitors == 0 {
		return p
	}
	p.Requests /= float64(p.Visitors)
	p.Hashes /= float64(p.Visitors)
	p.TwinMedian, p.Median = quantile(twin, 0.5), quantile(got, 0.5)
	p.TwinP90, p.P90 = quantile(twin, 0.9), quantile(got, 0.9)
	return p
}

// lateFor is the lateness of the first n counted requests.
func lateFor(late []time.Duration, n int) time.Duration {
	var sum time.Duration
	for _, d := range late[:min(n, len(late))] {
		sum += d
	}
	return sum
}

func quantile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
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

func (r Report) requests() int {
	n := 0
	for _, run := range distinct(r.Runs) {
		n += run.Requests
	}
	return n
}

func (r Report) repeats() int {
	n := 0
	for _, run := range distinct(r.Runs) {
		n += run.Repeats
	}
	return n
}

// distinct is runs without nils and repeats (with Config.Mixed every
// strategy's entry is the same run).
func distinct(runs []*Run) []*Run {
	var out []*Run
	for _, run := range runs {
		if run != nil && !slices.Contains(out, run) {
			out = append(out, run)
		}
	}
	return out
}

// strategyColumns heads the strategy table's columns; the text table
// leaves the verdict's unnamed.
var strategyColumns = []string{"strategy", "n", "twin med", "median", "twin p90", "p90",
	"max gain", "max loss", "requests", "hashes", "noise", "verdict"}

// strategyRows is the strategy table's cells, as both renderings print
// them: each strategy's row, and each run's control row after its last
// strategy.
func (r Report) strategyRows() [][]string {
	var rows [][]string
	row := func(name string, p Paired, verdict string) {
		rows = append(rows, []string{name, strconv.Itoa(p.Visitors),
			p.TwinMedian.Round(time.Second).String(), p.Median.Round(time.Second).String(),
			p.TwinP90.Round(time.Second).String(), p.P90.Round(time.Second).String(),
			p.MaxGain.Round(time.Millisecond).String(), p.MaxLoss.Round(time.Millisecond).String(),
			strconv.FormatFloat(p.Requests, 'f', 1, 64), strconv.FormatFloat(p.Hashes, 'f', 0, 64),
			p.Noise.Round(time.Millisecond).String(), verdict})
	}
	controls := r.Controls
	for i, p := range r.Strategies {
		row(p.Kind.String(), p, p.verdict())
		if len(controls) > 0 && (i+1 == len(r.Strategies) || r.Runs[r.Strategies[i+1].Kind] != r.Runs[p.Kind]) {
			row("honest, control", controls[0], controls[0].controlVerdict())
			controls = controls[1:]
		}
	}
	return rows
}

// WriteMarkdown writes the strategy table of WriteTable as a Markdown
// table, the form the documents quote (docs/FAIRNESS.md, "A small run").
func (r Report) WriteMarkdown(w io.Writer) error {
	align := make([]string, len(strategyColumns))
	for i := range align {
		align[i] = "---:"
	}
	align[0], align[len(align)-1] = "---", "---"
	var b strings.Builder
	for _, cells := range append([][]string{strategyColumns, align}, r.strategyRows()...) {
		fmt.Fprintf(&b, "| %s |\n", strings.Join(cells, " | "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteTable writes the report as a text table a person can read.
func (r Report) WriteTable(w io.Writer) error {
	c := r.Baseline.Config
	var b strings.Builder
	fmt.Fprintf(&b, "fairgate sim: %d in the pre-queue over %v, %d arriving over %v after the start,\n", c.PreQueue, c.PreQueueSpan, c.Arrivals, c.ArrivalSpan)
	clock := "adaptive clock"
	if c.FixedTau > 0 {
		clock = fmt.Sprintf("fixed tau %v", c.FixedTau)
	}
	order := cmp.Or(c.QueueOrder, string(room.DefaultQueueOrder))
	if order == "fifo" {
		order += fmt.Sprintf(" (luck window %v)", c.Luck())
	}
	fmt.Fprintf(&b, "%.0f admissions/s, queue order %s, %s, 0-%v network delay, PoW %d bits, seed %d, through the gateway's HTTP handler;\n",
		c.Rate, order, clock, c.Jitter, c.Difficulty, c.Seed)
	repeats := ""
	if c.SkipEarlyRepeats {
		repeats = fmt.Sprintf(" (%d of them early repeats answered without sending)", r.repeats())
	}
	fmt.Fprintf(&b, "sale lasted %v, %d never admitted, %d tokens expired under honest visitors, %d requests%s\n\n",
		r.Baseline.Duration.Round(time.Second), r.Unadmitted, r.Expired, r.requests(), repeats)
	fmt.Fprintf(&b, "ordering (baseline run):\n")
	fmt.Fprintf(&b, "  pre-queue: Spearman rho arrival vs admission   %8.4f\n", r.PreQueueRho)
	fmt.Fprintf(&b, "  after the start: rho arrival vs admission      %8.4f\n", r.ArrivalRho)
	fmt.Fprintf(&b, "  admission rate while the queue held 10 s of it, per 10 s, of the target: min %.1f%%, mean %.1f%%, max %.1f%%\n",
		100*r.RateHeld.Min, 100*r.RateHeld.Mean, 100*r.RateHeld.Max)
	fmt.Fprintf(&b, "  pre-queue: rho lottery number vs admission     %8.4f\n", r.PreQueueLotRho)
	fmt.Fprintf(&b, "  arrivals after the start admitted after the whole pre-queue: %.2f%%", 100*r.PreQueueFirst)
	if r.PreQueueOvertake > 0 {
		fmt.Fprintf(&b, " (the others at most %v before its last)", r.PreQueueOvertake.Round(time.Millisecond))
	}
	b.WriteString("\n")
	for _, p := range r.EarlierFirst {
		fmt.Fprintf(&b, "  after the start, earlier of two arrivals %v apart admitted first: %.4f of %d pairs (fifo's rule with W %v: %.4f)\n",
			p.Delta, p.Share, p.Pairs, c.Luck(), p.Want)
	}
	fmt.Fprintf(&b, "  admission rate while the queue was not empty (drain included), per 10 s, of the target: min %.1f%%, mean %.1f%%, max %.1f%%\n",
		100*r.RateNonEmpty.Min, 100*r.RateNonEmpty.Mean, 100*r.RateNonEmpty.Max)
	fmt.Fprintf(&b, "  waits (median, p90, p99): pre-queue from the start %v %v %v; later arrivals from arrival %v %v %v\n",
		r.PreQueueWaits[0].Round(time.Second), r.PreQueueWaits[1].Round(time.Second), r.PreQueueWaits[2].Round(time.Second),
		r.ArrivalWaits[0].Round(time.Second), r.ArrivalWaits[1].Round(time.Second), r.ArrivalWaits[2].Round(time.Second))
	fmt.Fprintf(&b, "  mean wait by arrival decile after the start:")
	for _, w := range r.WaitByDecile {
		fmt.Fprintf(&b, " %v", w.Round(time.Second))
	}
	if len(r.Lanes) > 0 {
		fmt.Fprintf(&b, "\n  waits by lane (vip lane: %.0f%% of the rate):", 100*c.VIPLane)
		for _, l := range r.Lanes {
			name := cmp.Or(l.Lane, "default")
			fmt.Fprintf(&b, "\n    %-10s %6d visitors  median %9v  p90 %9v  max %9v", name, l.Visitors,
				l.Median.Round(time.Second), l.P90.Round(time.Second), l.Max.Round(time.Second))
		}
	}
	together := ""
	if c.Mixed {
		together = ", every strategy played in one run"
	}
	fmt.Fprintf(&b, "\n\nstrategies, each visitor paired with its honest twin (same visitor, same draw%s):\n", together)
	head := slices.Clone(strategyColumns)
	head[len(head)-1] = ""
	for _, cells := range append([][]string{head}, r.strategyRows()...) {
		args := make([]any, len(cells))
		for i, c := range cells {
			args[i] = c
		}
		fmt.Fprintf(&b, "  %-20s %5s %9s %9s %9s %9s %9s %9s %9s %10s %9s %s\n", args...)
	}
	for _, p := range r.Strategies {
		if p.Kind == LatePresenter {
			fmt.Fprintf(&b, "  late presenter: lost at most %v beyond its own lateness (how late it was for the requests its twin needed too)\n",
				p.MaxLossBeyondLate.Round(time.Millisecond))
		}
	}
	fmt.Fprintf(&b, "  (noise: the most an honest visitor of the same run moved against itself in the\n")
	if c.Mixed {
		fmt.Fprintf(&b, "   baseline, here what all the strategies together moved them; with an adaptive\n")
		fmt.Fprintf(&b, "   clock a strategy's gain is only meaningful above it.\n")
	} else {
		fmt.Fprintf(&b, "   baseline; with an adaptive clock a strategy's gain is only meaningful above it.\n")
	}
	fmt.Fprintf(&b, "   honest, control: honest visitors drawn as a strategy's are (the first of the\n")
	fmt.Fprintf(&b, "   run's control groups), and every group's median and p90 shift against its twins';\n")
	fmt.Fprintf(&b, "   a strategy's 1%% gain is only a gain beyond all but 1%% of them;\n")
	fmt.Fprintf(&b, "   k anonymous tokens are k draws: what they buy is paid in k proofs of work;\n")
	fmt.Fprintf(&b, "   with identity configured, k tabs of one login share one draw)\n")
	_, err := io.WriteString(w, b.String())
	return err
}
