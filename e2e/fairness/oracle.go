package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/fairgate/fairgate/admission/queue"
)

// clockEvery is how often the probe reads the room's serving clock for
// the rule oracle: the oracle's eligibility times are this fine.
const clockEvery = 250 * time.Millisecond

// clockSample is the room's serving clock S at a moment, by the room's
// own account (its admin API's now and clock), and in a fifo room what
// the node places keys on it with.
type clockSample struct {
	At   time.Time    `json:"at"`
	S    float64      `json:"s"`
	FIFO *fifoFigures `json:"fifo,omitempty"`
}

// fifoFigures is the admin API's fifo object: two nodes that hold
// different figures tell one place different moments.
type fifoFigures struct {
	ForecastAt string  `json:"forecast_at"`
	RankZero   float64 `json:"rank_zero"`
	PreQueue   float64 `json:"pre_queue"`
	Ranked     float64 `json:"ranked"`
	FirstLuck  float64 `json:"first_luck"`
	LastLuck   float64 `json:"last_luck"`
	Short      float64 `json:"short"`
	Shows      float64 `json:"shows"`
	Hold       float64 `json:"hold"`
}

func (s clockSample) String() string {
	out := fmt.Sprintf("S %.2f", s.S)
	if f := s.FIFO; f != nil {
		out += fmt.Sprintf(", ranked %.0f (pre-queue %.0f), luck %.1f–%.1f, short %.1f, shows %.2f, hold %.1f, rank zero %.2f",
			f.Ranked, f.PreQueue, f.FirstLuck, f.LastLuck, f.Short, f.Shows, f.Hold, f.RankZero)
		if at, err := time.Parse(time.RFC3339Nano, f.ForecastAt); err == nil {
			out += fmt.Sprintf(", from the tick %s before", s.At.Sub(at).Round(time.Millisecond))
		}
	}
	return out
}

// sampleAt is the last of samples taken at or before at.
func sampleAt(samples []clockSample, at time.Time) (clockSample, bool) {
	i := sort.Search(len(samples), func(i int) bool { return samples[i].At.After(at) })
	if i == 0 {
		return clockSample{}, false
	}
	return samples[i-1], true
}

// clockLog reads one node's serving clock until ctx ends (every node of a
// room reads the same clock, and may place keys on it differently).
type clockLog struct {
	mu      sync.Mutex
	samples []clockSample
}

func (l *clockLog) run(ctx context.Context, admin string) {
	client := &http.Client{Timeout: time.Second}
	t := time.NewTicker(clockEvery)
	defer t.Stop()
	for {
		if s, ok := readClock(ctx, client, admin); ok {
			l.mu.Lock()
			l.samples = append(l.samples, s)
			l.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (l *clockLog) all() []clockSample {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]clockSample(nil), l.samples...)
}

// allSamples is each node's samples, node 1 first.
func allSamples(logs []clockLog) [][]clockSample {
	out := make([][]clockSample, len(logs))
	for i := range logs {
		out[i] = logs[i].all()
	}
	return out
}

func readClock(ctx context.Context, client *http.Client, admin string) (clockSample, bool) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, admin+"/rooms/"+roomName, nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := client.Do(req)
	if err != nil {
		return clockSample{}, false
	}
	defer resp.Body.Close()
	var st struct {
		Clock float64      `json:"clock"`
		Now   string       `json:"now"`
		FIFO  *fifoFigures `json:"fifo"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return clockSample{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, st.Now)
	if err != nil {
		return clockSample{}, false
	}
	return clockSample{At: at, S: st.Clock, FIFO: st.FIFO}, true
}

// reaches is the moment the sampled clock first reads target, linear
// between samples; false if it never did while sampled.
func reaches(samples []clockSample, target float64) (time.Time, bool) {
	for i, s := range samples {
		if s.S < target {
			continue
		}
		if i == 0 {
			return s.At, true
		}
		p := samples[i-1]
		f := (target - p.S) / (s.S - p.S)
		return p.At.Add(time.Duration(f * float64(s.At.Sub(p.At)))), true
	}
	return time.Time{}, false
}

// ruleRow is, for one strategy's visitors in a lottery room, their
// admission minus the moment the rule admits their entry and draw: the
// first checkpoint of their draw at or after the clock passed their
// threshold (S − srv ≥ −ln(1 − v)). A place then waits for its slot
// while the bucket binds, so an honest place is at or after it; a place
// before it went in sooner than the rule lets anyone.
type ruleRow struct {
	Strategy string `json:"strategy"`
	Judged   int    `json:"judged"`
	spread          // admission minus the rule's time, over those judged
	Before   int    `json:"before_rule"` // more than maxAhead before it
	// Unknown counts admitted visitors the oracle could not place: no
	// entry read, the clock never sampled past the threshold, or no
	// checkpoint of the login's seen after it.
	Unknown int `json:"unknown"`
}

// ruleOracle builds a row per strategy (honest first) from the sampled
// clock and each login's checkpoints: every nxt the room named to any of
// the login's tabs outside a busy answer (one login, one draw, one grid).
func ruleOracle(vs []*visitor, samples []clockSample) []ruleRow {
	grid := map[string][]int64{}
	for _, v := range vs {
		for _, e := range v.Events {
			if e.Nxt != 0 && e.Outcome != "busy" {
				grid[v.Login] = append(grid[v.Login], e.Nxt)
			}
		}
	}
	rows := map[string]*ruleRow{}
	names := append([]string{honest}, strategies...)
	for _, s := range names {
		rows[s] = &ruleRow{Strategy: s}
	}
	for _, v := range vs {
		if v.Admitted.IsZero() {
			continue
		}
		row := rows[v.Strategy]
		at, ok := ruleTime(v, grid[v.Login], samples)
		if !ok {
			row.Unknown++
			continue
		}
		row.Judged++
		d := v.Admitted.Sub(at)
		row.Diffs = append(row.Diffs, d)
		if d < -maxAhead {
			row.Before++
		}
	}
	out := make([]ruleRow, 0, len(names))
	for _, s := range names {
		row := rows[s]
		row.settle()
		out = append(out, *row)
	}
	return out
}

// ruleTime is the first of the login's checkpoints at or after v's
// threshold is passed.
func ruleTime(v *visitor, checkpoints []int64, samples []clockSample) (time.Time, bool) {
	if v.Entry == nil {
		return time.Time{}, false
	}
	eligible, ok := reaches(samples, *v.Entry+queue.Threshold(v.Lottery))
	if !ok {
		return time.Time{}, false
	}
	first := int64(0)
	for _, c := range checkpoints {
		if c >= eligible.UnixMilli() && (first == 0 || c < first) {
			first = c
		}
	}
	if first == 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(first), true
}

// spread is a list of time differences with its median and extremes.
type spread struct {
	Diffs  []time.Duration `json:"diffs"`
	Median time.Duration   `json:"median"`
	Min    time.Duration   `json:"min"`
	Max    time.Duration   `json:"max"`
}

// settle sorts the differences and sets the median and extremes.
func (s *spread) settle() {
	sort.Slice(s.Diffs, func(i, j int) bool { return s.Diffs[i] < s.Diffs[j] })
	n := len(s.Diffs)
	if n == 0 {
		return
	}
	s.Min, s.Max, s.Median = s.Diffs[0], s.Diffs[n-1], s.Diffs[n/2]
	if n%2 == 0 {
		s.Median = (s.Diffs[n/2-1] + s.Diffs[n/2]) / 2
	}
}
