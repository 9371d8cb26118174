package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fairgate/fairgate/e2e/internal/pass"
)

// Targets (-check).
const (
	maxAhead      = time.Second // no strategy's twin ahead by more
	fifoTolerance = 0.05        // |P − rule| at each Δ
	windowLength  = 10 * time.Second
	windowShare   = 0.95 // of the rate, in every window while that many wait
)

// config is what the run was.
type config struct {
	Order      string        `json:"order"`
	Scale      string        `json:"scale"`
	Rate       float64       `json:"rate"`
	SaleStart  time.Time     `json:"sale_start"`
	LuckWindow time.Duration `json:"luck_window"`
	Timing     pageTiming    `json:"page_timing"`
	Seed       uint64        `json:"seed"`
	End        time.Time     `json:"end"`
	Deadline   time.Time     `json:"deadline"`
	Nodes      int           `json:"nodes"`
	Weights    []float64     `json:"weights"`           // each tab's chance of each node
	Leavers    float64       `json:"leavers,omitempty"` // the share of visitors without a twin chosen to leave
}

// leaverRow is what the leavers did: the visitors without a twin chosen
// to close their tab after their claim, those that did before a pass,
// and how the visitors without a twin who stayed fared.
type leaverRow struct {
	Chosen        int `json:"chosen"`
	Left          int `json:"left"`
	LeftAtOnce    int `json:"left_after_claim"` // after the answer to their first attempt
	AdmittedFirst int `json:"admitted_before_leaving"`
	Stayers       int `json:"stayers"` // without a twin, and did not leave
	StayersIn     int `json:"stayers_admitted"`
}

// nodeRow is what one node served: the tabs sent to it, and the passes
// it gave (a login's pass may come from a node its first tab never asked).
type nodeRow struct {
	Node   int `json:"node"` // from 0
	Tabs   int `json:"tabs"`
	Passes int `json:"passes"`
}

type twinRow struct {
	Strategy string `json:"strategy"`
	Pairs    int    `json:"pairs"`
	Both     int    `json:"both_admitted"`
	// The strategy twin's admission minus the honest twin's, over the
	// pairs both admitted.
	spread
	// Ahead counts pairs whose strategy twin went in more than maxAhead
	// before its honest twin, or went in while the honest twin never did.
	Ahead         int `json:"ahead"`
	HonestMissing int `json:"honest_not_admitted"`
	StratMissing  int `json:"strategy_not_admitted"`
}

type fifoBin struct {
	Name  string  `json:"name"`
	Lo    float64 `json:"lo_seconds"`
	Hi    float64 `json:"hi_seconds"`
	Pairs int     `json:"pairs"`
	P     float64 `json:"p"`
	SE    float64 `json:"se"`
	Rule  float64 `json:"rule"`
}

type window struct {
	From     time.Duration `json:"from"` // after the sale start
	Admitted int           `json:"admitted"`
	// Waiting counts the places of visitors following the page (honest
	// and 5-tabs) waiting at the window's start: a late presenter or a
	// slow poller that is not asking cannot be admitted, nor can a
	// visitor who left.
	Waiting int  `json:"waiting"`
	Counted bool `json:"counted"`        // at least rate × window waiting
	Gone    int  `json:"gone,omitempty"` // places that left before the window, not admitted
}

type target struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

type results struct {
	Config          config      `json:"config"`
	Wall            string      `json:"wall"`
	Twins           []twinRow   `json:"twins"`
	HonestExpired   int         `json:"honest_tokens_expired"`
	SlotsLost       int         `json:"slots_lost"`
	Admitted        int         `json:"passes"`
	Places          int         `json:"places"`
	LoginsOverOne   []string    `json:"logins_over_one_pass"`
	PassesHistogram map[int]int `json:"logins_by_passes"`
	Fifo            []fifoBin   `json:"fifo,omitempty"`
	FifoDeciles     []decile    `json:"fifo_deciles,omitempty"`
	PostBeforePre   int         `json:"post_start_before_last_pre_queue"`
	PreQueueHonest  int         `json:"pre_queue_honest"`
	// StayersWaiting counts the honest visitors who took a token and
	// never left, and whose place the room had not admitted by the end.
	StayersWaiting int `json:"stayers_not_admitted"`
	// SlotsShared counts the slots the room gave more than one login
	// whose tabs all follow the page: two places found apart at one
	// moment go in in whichever order their requests are served.
	SlotsShared int `json:"slots_shared"`
	// BoundaryTrace, when later arrivals went in before the pre-queue's
	// last place, is that place's answers and the first of those
	// arrivals, so a rare failure can be read from the report alone.
	BoundaryTrace []string `json:"boundary_trace,omitempty"`
	// SlotTrace, when slots were lost, is the answers of the first
	// visitors who lost one, each with its node.
	SlotTrace []string `json:"slot_trace,omitempty"`
	// NodeLog is each node's warnings and errors (the first few), which
	// a failed run's report prints: a stalled store or a node's refusals
	// show there, not in the visitors' answers.
	NodeLog      []string      `json:"node_log,omitempty"`
	Leavers      *leaverRow    `json:"leavers,omitempty"`
	Windows      []window      `json:"windows"`
	ByNode       []nodeRow     `json:"by_node,omitempty"`
	Tabs         *tabsRow      `json:"tabs_at_nodes,omitempty"`
	Rule         []ruleRow     `json:"rule_oracle,omitempty"`
	ClockSamples []clockSample `json:"clock_samples,omitempty"`
	Targets      []target      `json:"targets"`
	Notes        []string      `json:"notes,omitempty"`
	Visitors     []*visitor    `json:"visitors"`
}

// place is one tab's token: when it was taken, when it went in, and when
// its visitor left without going in.
type place struct {
	took, admitted, left time.Time
}

// analyse judges the run; samples are each node's readings of the room's
// serving clock (fifo's counter), node 1 first, taken through the run:
// the lottery's rule oracle reads node 1's, the report keeps them in both
// orders, and the tabs told apart are shown with each node's figures.
func analyse(vs []*visitor, c config, nodeSamples [][]clockSample) *results {
	res := &results{Config: c, Visitors: vs, PassesHistogram: map[int]int{}, Places: placeCount(vs)}
	var samples []clockSample
	if len(nodeSamples) > 0 {
		samples = nodeSamples[0]
	}
	res.ClockSamples = samples
	if c.Order == "lottery" && len(samples) > 0 {
		res.Rule = ruleOracle(vs, samples)
	}
	res.twins(vs)
	var lost []*visitor
	for _, v := range vs {
		for _, e := range v.Events {
			if v.followsPage() && e.Expired {
				res.HonestExpired++
			}
			if e.SlotLost {
				res.SlotsLost++
			}
		}
		if slices.ContainsFunc(v.Events, func(e event) bool { return e.SlotLost }) {
			lost = append(lost, v)
		}
	}
	if len(lost) > 0 {
		res.SlotTrace = slotTrace(c.SaleStart, lost)
	}
	res.passes(vs)
	res.StayersWaiting = stayersWaiting(vs)
	res.SlotsShared = slotsShared(vs)
	if c.Order == "fifo" {
		res.fifo(vs)
	}
	res.windows(vs)
	if c.Leavers > 0 {
		res.Leavers = leavers(vs)
	}
	if c.Nodes > 1 {
		res.ByNode = byNode(vs, c.Nodes)
		res.Tabs = tabsAlike(vs, c.SaleStart, nodeSamples)
	}
	res.judge()
	return res
}

func (res *results) twins(vs []*visitor) {
	byPair := map[int][2]*visitor{}
	for _, v := range vs {
		if v.Pair < 0 {
			continue
		}
		p := byPair[v.Pair]
		if v.Strategy == honest {
			p[0] = v
		} else {
			p[1] = v
		}
		byPair[v.Pair] = p
	}
	rows := map[string]*twinRow{}
	for _, s := range strategies {
		rows[s] = &twinRow{Strategy: s}
	}
	for _, p := range byPair {
		h, s := p[0], p[1]
		row := rows[s.Strategy]
		row.Pairs++
		switch {
		case h.Admitted.IsZero() && s.Admitted.IsZero():
			row.HonestMissing++
			row.StratMissing++
		case h.Admitted.IsZero():
			row.HonestMissing++
			row.Ahead++
		case s.Admitted.IsZero():
			row.StratMissing++
		default:
			row.Both++
			d := s.Admitted.Sub(h.Admitted)
			row.Diffs = append(row.Diffs, d)
			if d < -maxAhead {
				row.Ahead++
			}
		}
	}
	for _, s := range strategies {
		row := rows[s]
		row.settle()
		res.Twins = append(res.Twins, *row)
	}
}

func (res *results) passes(vs []*visitor) {
	byLogin := map[string]map[string]bool{}
	for _, v := range vs {
		if byLogin[v.Login] == nil {
			byLogin[v.Login] = map[string]bool{}
		}
		for _, p := range v.Passes {
			byLogin[v.Login][p] = true
		}
	}
	for login, ps := range byLogin {
		res.PassesHistogram[len(ps)]++
		res.Admitted += len(ps)
		if len(ps) > 1 {
			res.LoginsOverOne = append(res.LoginsOverOne, login)
		}
	}
	sort.Strings(res.LoginsOverOne)
}

// admittedAt is when the room admitted v: the slot a busy answer named,
// when the attempt that got the pass was sent at it (within
// slotPresentedWithin: the page presents at its slot), else when the pass
// came. Places the room gave one slot are admitted at one moment,
// whatever order their requests reach it in.
func admittedAt(v *visitor) time.Time {
	var slot time.Time
	for _, e := range v.Events {
		switch {
		case e.Outcome == "busy" && e.Nxt != 0:
			slot = time.UnixMilli(e.Nxt)
		case e.Pass != "" && e.At.Equal(v.Admitted):
			if !slot.IsZero() && !e.Sent.Before(slot) && e.Sent.Sub(slot) < slotPresentedWithin {
				return slot
			}
			return v.Admitted
		}
	}
	return v.Admitted
}

// placeAdmitted returns when the room admitted a visitor's place: the
// earliest admittedAt of its login's tabs, the visitor's and its twin's.
// The order is of places: a login is one place, so whichever of its tabs
// is let in first admits it, and the others follow on its pass.
func placeAdmitted(vs []*visitor) func(*visitor) time.Time {
	first := map[string]time.Time{}
	for _, v := range vs {
		if v.Admitted.IsZero() {
			continue
		}
		at := admittedAt(v)
		if cur, ok := first[v.Login]; !ok || at.Before(cur) {
			first[v.Login] = at
		}
	}
	return func(v *visitor) time.Time {
		if at, ok := first[v.Login]; ok {
			return at
		}
		return admittedAt(v)
	}
}

// maxTraced is how many later arrivals a boundary trace names.
const maxTraced = 5

// boundaryTrace is the pre-queue's last place's answers and those of the
// first later arrivals admitted before it, each with the node that gave
// it (which node found a place eligible is what tells an order the store
// kept from one a node's held admissions turned), times from the start.
func boundaryTrace(start time.Time, last *visitor, before []*visitor, admitted func(*visitor) time.Time) []string {
	rel := since(start)
	out := []string{fmt.Sprintf("last pre-queue place %s (draw %.4f), admitted %s", last.ID, last.Lottery, rel(admitted(last)))}
	out = append(out, eventLines(last, rel)...)
	sort.Slice(before, func(i, j int) bool { return admitted(before[i]).Before(admitted(before[j])) })
	for _, v := range before[:min(len(before), maxTraced)] {
		out = append(out, fmt.Sprintf("later arrival %s took %s, admitted %s", v.ID, rel(v.Took), rel(admitted(v))))
		out = append(out, eventLines(v, rel)...)
	}
	return out
}

// slotTrace is the answers of the first visitors (by the moment of their
// first lost slot) who were answered wait, or a later slot, at a slot a
// busy answer gave them, times from the start.
func slotTrace(start time.Time, lost []*visitor) []string {
	rel := since(start)
	firstLost := func(v *visitor) time.Time {
		i := slices.IndexFunc(v.Events, func(e event) bool { return e.SlotLost })
		return v.Events[i].At
	}
	slices.SortFunc(lost, func(a, b *visitor) int { return firstLost(a).Compare(firstLost(b)) })
	var out []string
	for _, v := range lost[:min(len(lost), maxTraced)] {
		out = append(out, fmt.Sprintf("%s (%s, took %s) lost a slot at %s", v.ID, v.Strategy, rel(v.Took), rel(firstLost(v))))
		out = append(out, eventLines(v, rel)...)
	}
	return out
}

// since writes a moment as the seconds from start.
func since(start time.Time) func(time.Time) string {
	return func(t time.Time) string { return secsText(t.Sub(start)) }
}

// eventLines are v's requests and answers, each with its tab's node.
func eventLines(v *visitor, rel func(time.Time) string) []string {
	out := make([]string, 0, len(v.Events))
	for _, e := range v.Events {
		line := fmt.Sprintf("  %s sent %s answered %s: %d %s", e.Path, rel(e.Sent), rel(e.At), e.Status, e.Outcome)
		if e.Nxt != 0 {
			line += " next " + rel(time.UnixMilli(e.Nxt))
		}
		if e.Tab >= 0 && e.Tab < len(v.Nodes) {
			line += fmt.Sprintf(" (node %d)", v.Nodes[e.Tab]+1)
		}
		if e.SlotLost {
			line += " LOST"
		}
		out = append(out, line)
	}
	return out
}

// slotsShared counts the slots held, when their places were admitted, by
// more than one login whose tabs all follow the page. A login with a
// strategy tab is left out: a tab presenting late takes the slot its
// place would have had, which another place holds, on purpose.
func slotsShared(vs []*visitor) int {
	page := map[string]bool{}
	for _, v := range vs {
		all, seen := page[v.Login]
		page[v.Login] = (all || !seen) && v.followsPage()
	}
	logins := map[int64]map[string]bool{}
	for _, v := range vs {
		slot := heldSlot(v)
		if slot == 0 || !page[v.Login] {
			continue
		}
		if logins[slot] == nil {
			logins[slot] = map[string]bool{}
		}
		logins[slot][v.Login] = true
	}
	shared := 0
	for _, held := range logins {
		if len(held) > 1 {
			shared++
		}
	}
	return shared
}

// heldSlot is the slot (Unix milliseconds) the last busy answer named to
// an admitted visitor, 0 for one admitted without a slot or not at all.
func heldSlot(v *visitor) int64 {
	if v.Admitted.IsZero() {
		return 0
	}
	var slot int64
	for _, e := range v.Events {
		if e.Outcome == "busy" && e.Nxt != 0 {
			slot = e.Nxt
		}
	}
	return slot
}

// stayersWaiting counts the honest visitors who took a token, did not
// leave, and whose place was not admitted: a room that stops admitting
// before its last place shows here, however well it kept the order.
func stayersWaiting(vs []*visitor) int {
	place := placeAdmitted(vs)
	n := 0
	for _, v := range vs {
		if v.Strategy == honest && !v.Took.IsZero() && v.Left.IsZero() && place(v).IsZero() {
			n++
		}
	}
	return n
}

// stepsBack counts the readings of the room's clock below the one before,
// and the largest fall. A clock never runs back, so a fall is a node that
// read the clock ahead of the room's (it learnt a tick after the tick
// took effect) and judged its places on that reading meanwhile.
func stepsBack(samples []clockSample) (n int, most float64) {
	for i := 1; i < len(samples); i++ {
		if fall := samples[i-1].S - samples[i].S; fall > clockFallTolerance {
			n++
			most = max(most, fall)
		}
	}
	return n, most
}

// clockFallTolerance is the fall of a clock reading taken for rounding
// (the admin API prints the clock in full; the clock itself never falls).
const clockFallTolerance = 1e-6

// slotPresentedWithin is how soon after its slot an attempt counts as
// presented at it.
const slotPresentedWithin = time.Second

// fifo compares how often the earlier of two honest post-start arrivals
// Δ apart went in first with the rule 1 − ½e^(−Δ/W), and counts honest
// post-start arrivals the room admitted before the last honest pre-queue
// place (placeAdmitted: places given one slot are admitted together, and
// a place with a twin is admitted with whichever of its tabs goes in
// first). A visitor who left is in neither: the order is the stayers'.
func (res *results) fifo(vs []*visitor) {
	var post, placed, before []*visitor
	var lastPre time.Time
	var last *visitor
	place := placeAdmitted(vs)
	for _, v := range vs {
		if v.Strategy != honest || v.Took.IsZero() || !v.Left.IsZero() {
			continue
		}
		if v.PreQueue {
			res.PreQueueHonest++
			if at := place(v); at.After(lastPre) {
				lastPre, last = at, v
			}
			continue
		}
		if !place(v).IsZero() {
			placed = append(placed, v)
		}
		if !v.Admitted.IsZero() {
			post = append(post, v)
		}
	}
	for _, v := range placed {
		if place(v).Before(lastPre) {
			res.PostBeforePre++
			before = append(before, v)
		}
	}
	if len(before) > 0 {
		res.BoundaryTrace = boundaryTrace(res.Config.SaleStart, last, before, place)
	}
	sort.Slice(post, func(i, j int) bool { return post[i].Took.Before(post[j].Took) })
	w := res.Config.LuckWindow.Seconds()
	bins := []fifoBin{
		{Name: "0.1s", Lo: 0, Hi: 0.2},
		{Name: fmt.Sprintf("W=%gs", w), Lo: 0.8 * w, Hi: 1.2 * w},
		{Name: fmt.Sprintf("5W=%gs", 5*w), Lo: 4.5 * w, Hi: 5.5 * w},
	}
	for bi := range bins {
		b := &bins[bi]
		first, rule := 0, 0.0
		for i := range post {
			for j := i + 1; j < len(post); j++ {
				delta := post[j].Took.Sub(post[i].Took).Seconds()
				if delta > b.Hi {
					break
				}
				if delta <= b.Lo && !(b.Lo == 0 && delta > 0) {
					continue
				}
				b.Pairs++
				rule += 1 - 0.5*math.Exp(-delta/w)
				if post[i].Admitted.Before(post[j].Admitted) {
					first++
				}
			}
		}
		if b.Pairs > 0 {
			b.P = float64(first) / float64(b.Pairs)
			b.Rule = rule / float64(b.Pairs)
			b.SE = math.Sqrt(b.P * (1 - b.P) / float64(b.Pairs))
		}
	}
	res.Fifo = bins
	res.FifoDeciles = deciles(post, res.Config.SaleStart)
}

// decile is a tenth of the honest post-start arrivals admitted, in
// arrival order: when they arrived, and their mean admission and wait.
type decile struct {
	From     time.Duration `json:"from"` // first arrival, after the sale start
	To       time.Duration `json:"to"`   // last arrival
	N        int           `json:"n"`
	Admitted time.Duration `json:"mean_admitted"` // after the sale start
	Wait     time.Duration `json:"mean_wait"`
}

// deciles splits post (in arrival order) into tenths. In fifo each
// tenth goes in after the one before, to within the luck a window adds,
// which a tenth's mean mostly averages away: its mean admission is not
// earlier. Its mean wait need not rise (a queue that drains shortens it).
func deciles(post []*visitor, start time.Time) []decile {
	if len(post) < 10 {
		return nil
	}
	out := make([]decile, 10)
	for i := range out {
		part := post[i*len(post)/10 : (i+1)*len(post)/10]
		d := &out[i]
		d.From, d.To, d.N = part[0].Took.Sub(start), part[len(part)-1].Took.Sub(start), len(part)
		var admitted, wait time.Duration
		for _, v := range part {
			admitted += v.Admitted.Sub(start)
			wait += v.Admitted.Sub(v.Took)
		}
		d.Admitted, d.Wait = admitted/time.Duration(len(part)), wait/time.Duration(len(part))
	}
	return out
}

// tenthsSigmas is how many standard errors of the difference of two
// tenths' mean luck a tenth may go in ahead of an earlier one. The rule's
// luck is exponential with mean W, so a mean over n places has a standard
// error of W/√n: a fixed second would test the rule's own noise at the
// small scale's 10–14 places a tenth.
const tenthsSigmas = 3

// tenthsTolerance is how far a tenth of a places may go in ahead of an
// earlier one of b places by luck alone (never less than maxAhead).
func tenthsTolerance(w time.Duration, a, b int) time.Duration {
	tol := time.Duration(tenthsSigmas * float64(w) * math.Sqrt(1/float64(a)+1/float64(b)))
	return max(tol, maxAhead)
}

// decilesInOrder counts the tenths whose mean admission is before an
// earlier tenth's by more than the luck of their sizes allows. Every
// earlier tenth, not only the one before: under the rule tenths a few
// apart go in seconds apart, so a queue served in reverse or at random
// shows there even where neighbours stay within their luck.
func decilesInOrder(ds []decile, w time.Duration) int {
	bad := 0
	for i := 1; i < len(ds); i++ {
		for j := range i {
			if ds[i].Admitted < ds[j].Admitted-tenthsTolerance(w, ds[i].N, ds[j].N) {
				bad++
				break
			}
		}
	}
	return bad
}

// windows counts admissions in each 10 s window after the start, and the
// places waiting at its start. A login is one place, however many tabs or
// twins took tokens for it: its entry is its first token, its admission
// the second its pass was decided (the pass's iat: the room's own clock,
// which a loaded client's reading of its answers does not bunch). A
// place whose visitor left waits until it left.
func (res *results) windows(vs []*visitor) {
	byLogin := map[string]*place{}
	asks := map[string]bool{}
	var logins []string
	var last time.Time
	for _, v := range vs {
		lp, ok := byLogin[v.Login]
		if !ok {
			lp = &place{}
			byLogin[v.Login] = lp
			logins = append(logins, v.Login)
		}
		for _, p := range tabPlaces(v) {
			if lp.took.IsZero() || (!p.took.IsZero() && p.took.Before(lp.took)) {
				lp.took = p.took
			}
		}
		if !v.Left.IsZero() {
			lp.left = v.Left
		}
		for _, e := range v.Events {
			iat := pass.IssuedAt(e.Pass)
			if e.Pass == "" || iat == 0 {
				continue
			}
			at := time.Unix(iat, 0)
			if lp.admitted.IsZero() || at.Before(lp.admitted) {
				lp.admitted = at
			}
			if at.After(last) {
				last = at
			}
		}
		asks[v.Login] = asks[v.Login] || v.followsPage()
	}
	var places, asking []place
	for _, l := range logins {
		places = append(places, *byLogin[l])
		if asks[l] {
			asking = append(asking, *byLogin[l])
		}
	}
	need := int(math.Ceil(res.Config.Rate * windowLength.Seconds()))
	start := res.Config.SaleStart
	for from := start; !from.Add(windowLength).After(last); from = from.Add(windowLength) {
		to := from.Add(windowLength)
		w := window{From: from.Sub(start)}
		for _, p := range places {
			if !p.admitted.IsZero() && !p.admitted.Before(from) && p.admitted.Before(to) {
				w.Admitted++
			}
		}
		for _, p := range asking {
			if !p.took.Before(from) || (!p.admitted.IsZero() && p.admitted.Before(from)) {
				continue
			}
			if !p.left.IsZero() && !p.left.After(from) {
				w.Gone++
				continue
			}
			w.Waiting++
		}
		w.Counted = w.Waiting >= need
		res.Windows = append(res.Windows, w)
	}
}

// tabPlaces are the places of v's tabs: each tab's first token and its
// first pass (a tab that was given a new place after a refusal keeps
// its first token's time: it waited from then).
func tabPlaces(v *visitor) []place {
	byTab := map[int]*place{}
	var order []int
	for _, e := range v.Events {
		p := byTab[e.Tab]
		if p == nil {
			p = &place{}
			byTab[e.Tab] = p
			order = append(order, e.Tab)
		}
		if e.Path == "/token" && e.Status == 200 && p.took.IsZero() {
			p.took = e.At
		}
		if e.Pass != "" && p.admitted.IsZero() {
			p.admitted = e.At
		}
	}
	out := make([]place, 0, len(order))
	for _, t := range order {
		if p := byTab[t]; !p.took.IsZero() {
			out = append(out, *p)
		}
	}
	return out
}

// leavers counts the visitors without a twin chosen to leave, those that
// left before a pass, and the admissions of those that stayed.
func leavers(vs []*visitor) *leaverRow {
	row := &leaverRow{}
	for _, v := range vs {
		if v.Pair >= 0 {
			continue
		}
		if v.LeaveAfter > 0 {
			row.Chosen++
		}
		switch {
		case !v.Left.IsZero():
			row.Left++
			if v.LeaveAfter == 1 {
				row.LeftAtOnce++
			}
		case v.LeaveAfter > 0 && !v.Admitted.IsZero():
			row.AdmittedFirst++
			fallthrough
		default:
			row.Stayers++
			if !v.Admitted.IsZero() {
				row.StayersIn++
			}
		}
	}
	return row
}

// byNode counts each node's tabs and the passes it gave.
func byNode(vs []*visitor, n int) []nodeRow {
	rows := make([]nodeRow, n)
	for i := range rows {
		rows[i].Node = i
	}
	for _, v := range vs {
		for _, node := range v.Nodes {
			rows[node].Tabs++
		}
		for _, e := range v.Events {
			if e.Pass != "" && e.Tab < len(v.Nodes) {
				rows[v.Nodes[e.Tab]].Passes++
			}
		}
	}
	return rows
}

// tabsRow compares the moments the nodes told one login's tabs to come
// back: the logins whose tabs were answered wait at two nodes within
// tabsCompared of each other, how many were told moments further apart
// than tabsTick and tabsGrain plus the time between the answers, and the
// worst.
type tabsRow struct {
	Logins int      `json:"logins"`
	Apart  int      `json:"apart"`
	Worst  float64  `json:"worst_s"` // the largest excess over the allowance, seconds
	Trace  []string `json:"trace,omitempty"`
}

const (
	// tabsCompared: answers at two nodes this close in time are compared.
	// The counter's plan and the figures a node predicts from change at
	// each tick, so one node may tell one tab moments far apart a second
	// apart; answers at once show what sets the nodes apart.
	tabsCompared = 100 * time.Millisecond
	// tabsTick is how far apart two nodes may place one moment: the
	// room's tick that sets it may take effect between the two answers,
	// or reach a node late.
	tabsTick = time.Second
	// tabsGrain is the grid of the moments a fifo room names (each a
	// point of the draw's grid: admission's fifoGrain).
	tabsGrain = 250 * time.Millisecond
)

// tabsAlike compares, for each login whose tabs asked at different
// nodes, its wait answers two at a time: each names the moment to come
// back, a share of the time to the moment its key is expected before it
// (or a checkpoint, for a claim or a recheck). Busy answers are left out:
// a slot is the place's own, but a busy answer without one (its node's
// budget spent) names that node's next window. The worst pair's trace
// shows the figures each node held before its answer, from samples (each
// node's, node 1 first; none when not sampled).
func tabsAlike(vs []*visitor, start time.Time, samples [][]clockSample) *tabsRow {
	row := &tabsRow{}
	rel := since(start)
	for _, v := range vs {
		if !slices.ContainsFunc(v.Nodes, func(n int) bool { return n != v.Nodes[0] }) {
			continue // its tabs asked one node
		}
		var told []event
		for _, e := range v.Events {
			if e.Status == http.StatusTooManyRequests && e.Outcome == "wait" && e.Nxt > 0 && e.Tab < len(v.Nodes) {
				told = append(told, e)
			}
		}
		compared, worst := false, time.Duration(0)
		var worstPair [2]event
		for i, a := range told {
			for _, b := range told[i+1:] {
				gap := b.At.Sub(a.At).Abs()
				if v.Nodes[a.Tab] == v.Nodes[b.Tab] || gap > tabsCompared {
					continue
				}
				compared = true
				excess := time.UnixMilli(a.Nxt).Sub(time.UnixMilli(b.Nxt)).Abs() - tabsTick - tabsGrain - gap
				if excess > worst {
					worst, worstPair = excess, [2]event{a, b}
				}
			}
		}
		if !compared {
			continue
		}
		row.Logins++
		if worst <= 0 {
			continue
		}
		row.Apart++
		if worst.Seconds() > row.Worst {
			row.Worst = worst.Seconds()
			row.Trace = row.Trace[:0]
			for _, e := range worstPair {
				node := v.Nodes[e.Tab]
				row.Trace = append(row.Trace, fmt.Sprintf("%s tab %d at node %d, answered %s: %s, next %s",
					v.ID, e.Tab, node+1, rel(e.At), e.Outcome, rel(time.UnixMilli(e.Nxt))))
				if node < len(samples) {
					if s, ok := sampleAt(samples[node], e.Sent); ok {
						row.Trace = append(row.Trace, fmt.Sprintf("  node %d at %s: %s", node+1, rel(s.At), s))
					}
				}
			}
		}
	}
	return row
}

func (res *results) judge() {
	add := func(name string, ok bool, format string, args ...any) {
		res.Targets = append(res.Targets, target{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	for _, row := range res.Twins {
		add("twin "+row.Strategy, row.Ahead == 0, "%d of %d pairs with the strategy twin ahead by more than %s", row.Ahead, row.Pairs, maxAhead)
	}
	add("honest tokens expired", res.HonestExpired == 0, "%d", res.HonestExpired)
	add("slots lost", res.SlotsLost == 0, "%d", res.SlotsLost)
	add("passes per login", len(res.LoginsOverOne) == 0, "%d logins with more than one pass", len(res.LoginsOverOne))
	add("slots shared", res.SlotsShared == 0, "%d slots given to more than one login following the page", res.SlotsShared)
	add("stayers admitted", res.StayersWaiting == 0, "%d honest visitors who stayed not admitted by the run's end", res.StayersWaiting)
	backs, most := stepsBack(res.ClockSamples)
	if t := res.Tabs; t != nil {
		add("tabs told alike", t.Apart == 0, "%d of %d logins with tabs at two nodes told moments more than %s (and the time between the answers) apart, the worst by %.2fs more", t.Apart, t.Logins, tabsTick+tabsGrain, t.Worst)
	}
	add("clock never steps back", backs == 0, "%d of %d readings of the room's clock at node 1 below the one before (the largest by %.3f)", backs, len(res.ClockSamples), most)
	for _, b := range res.Fifo {
		// A small run's few pairs cannot measure P to ±0.05: it is held
		// to three standard errors where they are wider.
		tol := math.Max(fifoTolerance, 3*b.SE)
		ok := b.Pairs > 0 && math.Abs(b.P-b.Rule) <= tol
		add("fifo P at Δ≈"+b.Name, ok, "P %.3f (±%.3f, %d pairs) against the rule %.3f ± %.3f", b.P, b.SE, b.Pairs, b.Rule, tol)
	}
	if res.Config.Order == "fifo" {
		add("fifo post-start before pre-queue", res.PostBeforePre == 0, "%d", res.PostBeforePre)
		bad := decilesInOrder(res.FifoDeciles, res.Config.LuckWindow)
		add("fifo tenths in arrival order", len(res.FifoDeciles) > 0 && bad == 0,
			"%d of %d tenths of the post-start arrivals admitted on average before an earlier tenth by more than their luck allows (%d·W·√(1/a + 1/b), W = %s)", bad, len(res.FifoDeciles), tenthsSigmas, res.Config.LuckWindow)
	}
	need := res.Config.Rate * windowLength.Seconds()
	bad, counted := 0, 0
	for _, w := range res.Windows {
		if !w.Counted {
			continue
		}
		counted++
		if float64(w.Admitted) < windowShare*need {
			bad++
		}
	}
	add("rate windows", bad == 0 && counted > 0, "%d of %d windows with %g following the page waiting below %.0f%% of %g", bad, counted, need, windowShare*100, need)
}

// print writes the tables and the targets, and returns how many failed,
// not counting the targets whose names start with one in skip (reported,
// marked skipped).
func (res *results) print(w io.Writer, skip []string) int {
	c := res.Config
	fmt.Fprintf(w, "fairness probe: order %s, scale %s, rate %g/s, %d visitors, %d places, wall %s\n",
		c.Order, c.Scale, c.Rate, len(res.Visitors), res.Places, res.Wall)
	if c.Nodes > 1 {
		fmt.Fprintf(w, "nodes: %d `fairgate proxy` on one DynamoDB Local store\n", c.Nodes)
		fmt.Fprintf(w, "  %4s %6s %6s %6s\n", "node", "share", "tabs", "passes")
		for _, r := range res.ByNode {
			fmt.Fprintf(w, "  %4d %5.0f%% %6d %6d\n", r.Node+1, 100*c.Weights[r.Node], r.Tabs, r.Passes)
		}
	}
	if t := res.Tabs; t != nil && len(t.Trace) > 0 {
		fmt.Fprintf(w, "tabs told apart, the worst pair:\n")
		for _, line := range t.Trace {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	fmt.Fprintf(w, "page timing (from the script): one-way cap %s, rate-limit jitter %s, closed wait %s, trouble wait %s, network retry %s\n\n",
		c.Timing.OneWayCap, c.Timing.RateLimitJitter, c.Timing.ClosedWait, c.Timing.TroubleWait, c.Timing.NetworkRetry)
	fmt.Fprintf(w, "twins: strategy twin's admission minus its honest twin's\n")
	fmt.Fprintf(w, "  %-16s %5s %5s %9s %9s %9s %8s %12s %12s\n", "strategy", "pairs", "both", "median", "min", "max", "ahead>1s", "honest-none", "strat-none")
	for _, r := range res.Twins {
		fmt.Fprintf(w, "  %-16s %5d %5d %9s %9s %9s %8d %12d %12d\n", r.Strategy, r.Pairs, r.Both,
			secsText(r.Median), secsText(r.Min), secsText(r.Max), r.Ahead, r.HonestMissing, r.StratMissing)
	}
	fmt.Fprintf(w, "\nhonest tokens expired: %d\nslots lost: %d\n", res.HonestExpired, res.SlotsLost)
	for _, line := range res.SlotTrace {
		fmt.Fprintf(w, "    %s\n", line)
	}
	fmt.Fprintf(w, "honest visitors who stayed, not admitted: %d\n", res.StayersWaiting)
	var hist []string
	for n := range 10 {
		if k := res.PassesHistogram[n]; k > 0 {
			hist = append(hist, fmt.Sprintf("%d pass(es): %d", n, k))
		}
	}
	fmt.Fprintf(w, "passes per login: %s; logins with more than one: %d\n", strings.Join(hist, ", "), len(res.LoginsOverOne))
	if l := res.Leavers; l != nil {
		fmt.Fprintf(w, "leavers: %d of the visitors without a twin chosen to close their tab after their claim; %d left (%d right after it), %d admitted first; %d stayed, %d of them admitted\n",
			l.Chosen, l.Left, l.LeftAtOnce, l.AdmittedFirst, l.Stayers, l.StayersIn)
	}
	if len(res.Fifo) > 0 {
		fmt.Fprintf(w, "\nfifo: P(earlier honest post-start arrival admitted first), W = %s\n", c.LuckWindow)
		fmt.Fprintf(w, "  %-8s %-13s %6s %7s %7s %7s\n", "Δ", "bin (s)", "pairs", "P", "±se", "rule")
		for _, b := range res.Fifo {
			fmt.Fprintf(w, "  %-8s %-13s %6d %7.3f %7.3f %7.3f\n", b.Name, fmt.Sprintf("(%g, %g]", b.Lo, b.Hi), b.Pairs, b.P, b.SE, b.Rule)
		}
		fmt.Fprintf(w, "  post-start arrivals admitted before the last pre-queue place (of %d honest pre-queue): %d\n", res.PreQueueHonest, res.PostBeforePre)
		for _, line := range res.BoundaryTrace {
			fmt.Fprintf(w, "    %s\n", line)
		}
		if len(res.FifoDeciles) > 0 {
			fmt.Fprintf(w, "  by tenth of the honest post-start arrivals admitted: arrived, mean admission, mean wait (after the sale start)\n")
			for _, d := range res.FifoDeciles {
				fmt.Fprintf(w, "    %7s to %7s  %4d  %8s  %8s\n", secsText(d.From), secsText(d.To), d.N, secsText(d.Admitted), secsText(d.Wait))
			}
		}
	}
	if len(res.Rule) > 0 {
		fmt.Fprintf(w, "\nrule oracle: admission minus the first checkpoint of the login's draw after S − srv ≥ −ln(1 − v) (clock read every %s; reported, not a target)\n", clockEvery)
		fmt.Fprintf(w, "  %-16s %6s %9s %9s %9s %9s %8s\n", "strategy", "judged", "median", "min", "max", "before>1s", "unknown")
		for _, r := range res.Rule {
			fmt.Fprintf(w, "  %-16s %6d %9s %9s %9s %9d %8d\n", r.Strategy, r.Judged, secsText(r.Median), secsText(r.Min), secsText(r.Max), r.Before, r.Unknown)
		}
	}
	fmt.Fprintf(w, "\nrate use: admissions per %s window after the start (rate × window = %g)\n", windowLength, c.Rate*windowLength.Seconds())
	if c.Leavers > 0 {
		res.printLeaverWindows(w)
	} else {
		fmt.Fprintf(w, "  %6s %8s %8s %7s   (waiting: places following the page, at the window's start)\n", "from", "admitted", "waiting", "share")
		for _, win := range res.Windows {
			fmt.Fprintf(w, "  %5.0fs %8d %8d %6.0f%%%s\n", win.From.Seconds(), win.Admitted, win.Waiting,
				100*float64(win.Admitted)/(c.Rate*windowLength.Seconds()), notCounted(win))
		}
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "\nnote: %s\n", n)
	}
	failed := 0
	fmt.Fprintf(w, "\ntargets:\n")
	for _, t := range res.Targets {
		verdict := "ok     "
		switch {
		case t.OK:
		case slices.ContainsFunc(skip, func(s string) bool { return s != "" && strings.HasPrefix(t.Name, s) }):
			verdict = "skipped"
		default:
			verdict = "FAILED "
			failed++
		}
		fmt.Fprintf(w, "  %s %-34s %s\n", verdict, t.Name, t.Detail)
	}
	if failed > 0 && len(res.NodeLog) > 0 {
		fmt.Fprintf(w, "\nnodes' warnings and errors:\n")
		for _, line := range res.NodeLog {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	return failed
}

// printLeaverWindows is the rate use table of a run with leavers: the
// places gone at each window's start, and the stayers' lowest share.
func (res *results) printLeaverWindows(w io.Writer) {
	need := res.Config.Rate * windowLength.Seconds()
	fmt.Fprintf(w, "  %6s %8s %8s %6s %7s   (waiting: places following the page still there at the window's start; gone: left before it)\n", "from", "admitted", "waiting", "gone", "share")
	lowest, counted := math.Inf(1), 0
	for _, win := range res.Windows {
		share := float64(win.Admitted) / need
		fmt.Fprintf(w, "  %5.0fs %8d %8d %6d %6.0f%%%s\n", win.From.Seconds(), win.Admitted, win.Waiting, win.Gone, 100*share, notCounted(win))
		if win.Counted {
			counted++
			lowest = min(lowest, share)
		}
	}
	if counted > 0 {
		fmt.Fprintf(w, "  stayers' rate use: lowest %.0f%% of the rate over %d counted windows\n", 100*lowest, counted)
	}
}

func notCounted(win window) string {
	if win.Counted {
		return ""
	}
	return " (fewer waiting: not counted)"
}

// placeCount counts the tokens taken (every tab's first).
func placeCount(vs []*visitor) int {
	n := 0
	for _, v := range vs {
		n += len(tabPlaces(v))
	}
	return n
}

func (res *results) writeJSON(path string) error {
	b, err := json.MarshalIndent(res, "", " ")
	if err != nil {
		return fmt.Errorf("results: %w", err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func secsText(d time.Duration) string { return fmt.Sprintf("%+.2fs", d.Seconds()) }
