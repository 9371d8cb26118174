package gateway

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fairgate/fairgate/admission"
	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/internal/reply"
	"github.com/fairgate/fairgate/room"
)

// metrics of one room. No label names a visitor. The collectors belong to
// the room's shared state, so counts carry on across Caddy reloads, which
// give every new config a new registry.
type metrics struct {
	reg        prometheus.Registerer
	registered []prometheus.Collector
	issued     prometheus.Counter
	// attempts counts every answer of the token and admit endpoints
	// (answered); answers holds its series for each of answerSeries,
	// resolved once and shared by the copies a room's gateways make
	// (newMetrics): the admit poll counts one per poll, and a label lookup
	// costs more than the map's.
	attempts   *prometheus.CounterVec
	answers    map[answerKey]prometheus.Counter
	admissions prometheus.Counter
	// laneAdmissions counts admissions by lane (`default` for the default lane).
	laneAdmissions *prometheus.CounterVec
	powFailures    prometheus.Counter
	passChecks     *prometheus.CounterVec
	// passCached is passChecks{result="cached"}, resolved once: it counts
	// every protected request, the gateway's hottest path.
	passCached     prometheus.Counter
	cacheRequests  *prometheus.CounterVec
	upstreamErrors *prometheus.CounterVec
	// held counts requests answered without reaching the site because the
	// visitor had no pass: the waiting page, the JSON 429, the closed page.
	held *prometheus.CounterVec
	// waited is the time from a place's entry (its waiting token's iat,
	// which never moves) to admission.
	waited prometheus.Histogram
	// storeCalls times the state store's calls by operation; storeErrors
	// counts the failed ones (answers such as a lost compare-and-set are
	// not failures).
	storeCalls  *prometheus.HistogramVec
	storeErrors *prometheus.CounterVec
	// writtenBack counts the places admitted from memory while the store
	// failed (on_unavailable local) and written back after, by result:
	// written, or twice (the store had the place used by another
	// admission meanwhile).
	writtenBack *prometheus.CounterVec
	// sessionsEnded counts the sessions the origin ended (EndSessionHeader).
	sessionsEnded prometheus.Counter
	// passesRenewed counts the passes a room sized by capacity renewed.
	passesRenewed prometheus.Counter
	room          *roomCollector
}

// ObserveStore records one state store call.
func (m *metrics) ObserveStore(op string, took time.Duration, err error) {
	if errors.Is(err, roomstate.ErrUnavailable) {
		m.storeErrors.WithLabelValues(op).Inc() // failed fast, not timed
		return
	}
	m.storeCalls.WithLabelValues(op).Observe(took.Seconds())
	if err != nil && !errors.Is(err, roomstate.ErrNotFound) && !errors.Is(err, roomstate.ErrConflict) {
		m.storeErrors.WithLabelValues(op).Inc()
	}
}

// WrittenBack counts the places written back after a store outage.
func (m *metrics) WrittenBack(written, twice int) {
	m.writtenBack.WithLabelValues("written").Add(float64(written))
	m.writtenBack.WithLabelValues("twice").Add(float64(twice))
}

// roomMetrics returns the room's collectors, creating them once: they are
// the room's observer.
func roomMetrics(sh *room.Shared, now func() time.Time) *metrics {
	return sh.Observe(func() room.Observer { return newRoomMetrics(sh, now) }).(*metrics)
}

// newRoomMetrics builds a room's collectors, once per room.
func newRoomMetrics(shared *room.Shared, now func() time.Time) *metrics {
	roomLabel := prometheus.Labels{"room": shared.Room.Name()}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "fairgate", Name: name, Help: help, ConstLabels: roomLabel})
	}
	vec := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "fairgate", Name: name, Help: help, ConstLabels: roomLabel}, labels)
	}
	m := &metrics{
		issued:         counter("tokens_issued_total", "Waiting tokens issued."),
		attempts:       vec("admission_attempts_total", "Answers of the token and admit endpoints by endpoint, outcome and reason.", "endpoint", "outcome", "reason"),
		admissions:     counter("admissions_total", "Visitors admitted (passes issued)."),
		laneAdmissions: vec("lane_admissions_total", "Visitors admitted by lane (default: the default lane).", "lane"),
		powFailures:    counter("pow_failures_total", "Admission attempts with a wrong proof of work."),
		passChecks:     vec("pass_checks_total", "Protected requests with a pass, by result.", "result"),
		cacheRequests:  vec("cache_requests_total", "Cacheable requests by cache status.", "status"),
		upstreamErrors: vec("upstream_errors_total", "Failed calls to the upstream or the admission hook.", "kind"),
		held:           vec("held_requests_total", "Requests without a pass answered by the room instead of the site, by answer.", "answer"),
		waited: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "fairgate", Name: "wait_seconds",
			Help:    "Time from entering the queue (the waiting token's iat) to admission.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200}, ConstLabels: roomLabel}),
		storeCalls: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "fairgate", Name: "state_store_call_seconds",
			Help:    "State store calls by operation and how long they took.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}, ConstLabels: roomLabel}, []string{"op"}),
		storeErrors:   vec("state_store_errors_total", "Failed state store calls by operation (timeouts and calls refused while the store is failing included).", "op"),
		writtenBack:   vec("places_written_back_total", "Places admitted from memory while the state store failed (on_unavailable local), written back to it after, by result: written, or twice (admitted meanwhile by another node too).", "result"),
		sessionsEnded: counter("sessions_ended_total", "Sessions the origin ended with the Fairgate-End-Session header: the pass stopped counting as active."),
		passesRenewed: counter("passes_renewed_total", "Passes renewed for a visitor still on the site (rooms sized by capacity): session_length from the request, once less than half of it was left."),
		room:          newRoomCollector(shared, now),
	}
	m.passCached = m.passChecks.WithLabelValues("cached")
	m.answers = make(map[answerKey]prometheus.Counter, len(answerSeries))
	for _, k := range answerSeries {
		m.answers[k] = m.attempts.WithLabelValues(k.endpoint, k.outcome, k.reason)
	}
	return m
}

// answerKey is one series of admission_attempts_total.
type answerKey struct{ endpoint, outcome, reason string }

// The endpoints of admission_attempts_total.
const (
	endpointToken = "token"
	endpointAdmit = "admit"
)

// answerSeries are the answers of the token and admit endpoints, each
// counted from zero; docs/OPERATIONS.md lists them. An outcome the gate
// adds later is counted too, by its name, without a zero series.
var answerSeries = []answerKey{
	{endpointToken, "issued", "new"},
	{endpointToken, "issued", "kept"},
	{endpointToken, "invalid", "body_too_large"},
	{endpointToken, "invalid", "body_malformed"},
	{endpointToken, "invalid", "login"},
	{endpointToken, "closed", "closed"},
	{endpointToken, "unavailable", "starting"},
	{endpointToken, "error", "internal"},
	{endpointAdmit, "admit", "admitted"},
	{endpointAdmit, "admit", "again"},
	{endpointAdmit, "wait", "wait"},
	{endpointAdmit, "busy", "busy"},
	{endpointAdmit, "early", "early"},
	{endpointAdmit, "deferred", "hook_refused"},
	{endpointAdmit, "deferred", "hook_failed"},
	{endpointAdmit, "invalid", "body_too_large"},
	{endpointAdmit, "invalid", "body_malformed"},
	{endpointAdmit, "invalid", "body_unknown_field"},
	{endpointAdmit, "invalid", "no_token"},
	{endpointAdmit, "invalid", "login"},
	{endpointAdmit, "invalid", "malformed"},
	{endpointAdmit, "invalid", "token_invalid"},
	{endpointAdmit, "invalid", "pow"},
	{endpointAdmit, "invalid", "identity"},
	{endpointAdmit, "invalid", "lane"},
	{endpointAdmit, "reused", "token_used"},
	{endpointAdmit, "reused", "hook_refused"},
	{endpointAdmit, "closed", "closed"},
	{endpointAdmit, "unavailable", "starting"},
	{endpointAdmit, "unavailable", "ledger"},
	{endpointAdmit, "unavailable", "canceled"},
	{endpointAdmit, "unavailable", "hook_failed"},
	{endpointAdmit, "unavailable", "requeue"},
	{endpointAdmit, "error", "internal"},
}

// answered counts one answer of the token or admit endpoint.
func (m *metrics) answered(endpoint, outcome, reason string) {
	if c, ok := m.answers[answerKey{endpoint, outcome, reason}]; ok {
		c.Inc()
		return
	}
	m.attempts.WithLabelValues(endpoint, outcome, reason).Inc()
}

// answeredBody counts a request body the endpoint refused (reply.BodyReason).
func (m *metrics) answeredBody(endpoint string, err error) {
	m.answered(endpoint, "invalid", "body_"+reply.BodyReason(err))
}

// newMetrics registers the room's collectors with reg (nil: none) for one
// gateway. A collector reg already has is left as it is.
func newMetrics(reg prometheus.Registerer, shared *room.Shared, now func() time.Time) (*metrics, error) {
	base := roomMetrics(shared, now)
	m := *base
	m.reg, m.registered = reg, nil
	if reg == nil {
		return &m, nil
	}
	for _, c := range m.collectors() {
		err := reg.Register(c)
		var already prometheus.AlreadyRegisteredError
		switch {
		case err == nil:
			m.registered = append(m.registered, c)
		case errors.As(err, &already):
		default:
			return nil, err
		}
	}
	return &m, nil
}

// collectors are the room's metrics.
func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.issued, m.attempts, m.admissions, m.laneAdmissions, m.powFailures,
		m.passChecks, m.cacheRequests, m.upstreamErrors, m.held, m.waited, m.storeCalls, m.storeErrors, m.writtenBack, m.sessionsEnded, m.passesRenewed, m.room}
}

// RoomsCollector reports the metrics of every room in rs at scrape time,
// for a registry that outlives the gateways: the Caddy module registers it
// with the registry of Caddy's admin endpoint, which Caddy replaces at the
// start of every load, even one it then rejects.
func RoomsCollector(rs *room.Rooms, now func() time.Time) prometheus.Collector {
	return roomsCollector{rooms: rs, now: now}
}

type roomsCollector struct {
	rooms *room.Rooms
	now   func() time.Time
}

// Describe describes nothing: the rooms come and go, so the collector is
// unchecked.
func (roomsCollector) Describe(chan<- *prometheus.Desc) {}

func (c roomsCollector) Collect(ch chan<- prometheus.Metric) {
	for _, sh := range c.rooms.All() {
		for _, col := range roomMetrics(sh, c.now).collectors() {
			col.Collect(ch)
		}
	}
}

// unregister removes what this gateway registered.
func (m *metrics) unregister() {
	if m.reg == nil {
		return
	}
	for _, c := range m.registered {
		m.reg.Unregister(c)
	}
}

// roomCollector reports the room's live control state at scrape time. Its
// descriptors carry the room as a constant label, so each room's collector
// is distinct and a reload of the same room is recognised as already there.
type roomCollector struct {
	shared                               *room.Shared
	now                                  func() time.Time
	speed, bucket, population, rate, st  *prometheus.Desc
	laneRate, laneBucket, lanePopulation *prometheus.Desc
	active, capacity, ceiling, lapsed    *prometheus.Desc
}

// laneLabel is a lane's `lane` label value: its name, or `default`.
func laneLabel(name string) string {
	if name == "" {
		return room.DefaultLaneLabel
	}
	return name
}

func newRoomCollector(shared *room.Shared, now func() time.Time) *roomCollector {
	roomLabel := prometheus.Labels{"room": shared.Room.Name()}
	return &roomCollector{
		shared:     shared,
		now:        now,
		speed:      prometheus.NewDesc("fairgate_clock_speed", "Serving clock speed, clock units per second (1/tau).", nil, roomLabel),
		bucket:     prometheus.NewDesc("fairgate_bucket_level", "Admissions available in the bucket now.", nil, roomLabel),
		population: prometheus.NewDesc("fairgate_waiting_estimate", "Estimated visitors waiting: distinct places presented over the last window.", nil, roomLabel),
		rate:       prometheus.NewDesc("fairgate_target_rate", "Target admissions per second.", nil, roomLabel),
		st:         prometheus.NewDesc("fairgate_room_state", "1 for the room's current state.", []string{"state"}, roomLabel),
		laneRate: prometheus.NewDesc("fairgate_lane_target_rate",
			"Admissions per second a lane gets now: its share, or more while other lanes are empty.", []string{"lane"}, roomLabel),
		laneBucket:     prometheus.NewDesc("fairgate_lane_bucket_level", "Admissions available in a lane's bucket now.", []string{"lane"}, roomLabel),
		lanePopulation: prometheus.NewDesc("fairgate_lane_waiting_estimate", "Estimated visitors waiting in a lane.", []string{"lane"}, roomLabel),
		active:         prometheus.NewDesc("fairgate_active_visitors", "Visitors on the site at the last tick: passes presented within active_window (every node's with capacity on a state store, else this node's).", nil, roomLabel),
		capacity:       prometheus.NewDesc("fairgate_capacity", "Active visitors the room admits up to; 0 when it admits at its rate.", nil, roomLabel),
		lapsed:         prometheus.NewDesc("fairgate_slots_lapsed_total", "Slots this node lapsed because their holders did not come, every lane's: their admissions went back to the room.", nil, roomLabel),
		ceiling:        prometheus.NewDesc("fairgate_rate_ceiling", "The configured rate: with capacity, the most the capacity controller may set fairgate_target_rate to.", nil, roomLabel),
	}
}

func (c *roomCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.speed, c.bucket, c.population, c.rate, c.st, c.laneRate, c.laneBucket, c.lanePopulation, c.active, c.capacity, c.ceiling, c.lapsed} {
		ch <- d
	}
}

func (c *roomCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	r := c.shared.Room
	v := r.View(now)
	ch <- prometheus.MustNewConstMetric(c.speed, prometheus.GaugeValue, v.Clock.SpeedAt(now))
	ch <- prometheus.MustNewConstMetric(c.bucket, prometheus.GaugeValue, r.BucketLevel(now))
	ch <- prometheus.MustNewConstMetric(c.population, prometheus.GaugeValue, r.Population(now))
	site := c.shared.SiteStatus()
	ch <- prometheus.MustNewConstMetric(c.rate, prometheus.GaugeValue, site.Rate)
	ch <- prometheus.MustNewConstMetric(c.active, prometheus.GaugeValue, site.Active)
	ch <- prometheus.MustNewConstMetric(c.capacity, prometheus.GaugeValue, site.Capacity)
	ch <- prometheus.MustNewConstMetric(c.ceiling, prometheus.GaugeValue, site.Ceiling)
	c.shared.EachLane(func(lane string, r *admission.Room) {
		name := laneLabel(lane)
		ch <- prometheus.MustNewConstMetric(c.laneRate, prometheus.GaugeValue, r.View(now).Rate, name)
		ch <- prometheus.MustNewConstMetric(c.laneBucket, prometheus.GaugeValue, r.BucketLevel(now), name)
		ch <- prometheus.MustNewConstMetric(c.lanePopulation, prometheus.GaugeValue, r.Population(now), name)
	})
	ch <- prometheus.MustNewConstMetric(c.lapsed, prometheus.CounterValue, float64(c.shared.SlotsLapsed()))
	for _, s := range []admission.State{admission.StateOpen, admission.StateQueue, admission.StateScheduled, admission.StatePaused, admission.StateClosed} {
		val := 0.0
		if s == v.State {
			val = 1
		}
		ch <- prometheus.MustNewConstMetric(c.st, prometheus.GaugeValue, val, string(s))
	}
}
