package server

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
	"github.com/git-xet-transfer/git-xet-transfer/xet/store/blob"
)

// Metrics are the server's Prometheus metrics, on a registry of their own (never the process's
// default one), served by Handler on an address of its own (xet-server --metrics-listen). Labels
// are route templates, statuses and operation names: never a path, a query, a token or a user.
// The methods of a nil *Metrics do nothing.
type Metrics struct {
	reg             *prometheus.Registry
	requests        *prometheus.CounterVec
	latency         *prometheus.HistogramVec
	received, sent  prometheus.Counter
	xorbs, shards   prometheus.Counter
	xorbBytes       prometheus.Counter
	deduped         prometheus.Counter
	files           prometheus.Counter
	dedupeQueries   prometheus.Counter
	dedupeHits      prometheus.Counter
	bridge          *prometheus.CounterVec
	reconstructions *prometheus.CounterVec
	gcRuns          prometheus.Counter
	gcReclaimed     prometheus.Counter
	backendLatency  *prometheus.HistogramVec
	backendErrors   *prometheus.CounterVec
	quotaRefusals   prometheus.Counter
	slotWait        *prometheus.HistogramVec
	slotCuts        *prometheus.CounterVec
}

// NewMetrics makes the metrics on a fresh registry, with the Go runtime's and the process's.
func NewMetrics() *Metrics {
	reg := prometheus.NewRegistry()
	f := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Namespace: "xet", Name: name, Help: help})
		reg.MustRegister(c)
		return c
	}
	m := &Metrics{reg: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "xet", Name: "http_requests_total",
			Help: "HTTP requests by route template, method and status."}, []string{"route", "method", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "xet", Name: "http_request_duration_seconds",
			Help: "HTTP request latency by route template.", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"route"}),
		received:      f("received_bytes_total", "Request body bytes received."),
		sent:          f("sent_bytes_total", "Response body bytes sent."),
		xorbs:         f("xorbs_stored_total", "Xorbs stored (new to the store)."),
		xorbBytes:     f("xorb_bytes_stored_total", "Serialized bytes of the xorbs stored."),
		shards:        f("shards_stored_total", "Shards registered."),
		files:         f("files_registered_total", "Files new to the store."),
		deduped:       f("deduplicated_bytes_total", "Bytes of registered files held in xorbs stored before their shard."),
		dedupeQueries: f("global_dedupe_queries_total", "Global dedupe queries (GET /v1/chunks)."),
		dedupeHits:    f("global_dedupe_hits_total", "Global dedupe queries answered with a shard."),
		bridge: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "xet", Name: "bridge_requests_total",
			Help: "Basic-transfer (bridge) object requests by direction."}, []string{"direction"}),
		reconstructions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "xet", Name: "reconstructions_total",
			Help: "Reconstruction plans served, by API version."}, []string{"version"}),
		gcRuns:      f("gc_runs_total", "Garbage collections run by this process."),
		gcReclaimed: f("gc_reclaimed_bytes_total", "Bytes deleted for good by garbage collection in this process."),
		backendLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "xet", Name: "backend_duration_seconds",
			Help: "Storage backend call latency by operation.", Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10)}, []string{"op"}),
		backendErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "xet", Name: "backend_errors_total",
			Help: "Storage backend calls that failed (a miss is no failure), by operation."}, []string{"op"}),
		quotaRefusals: f("quota_refusals_total", "Uploads refused for a repository's quota."),
		slotWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "xet", Name: "upload_slot_wait_seconds",
			Help:    "How long requests waited for a slot, by pool (xorb, basic, shard_body, shard_registration), whether they got one or left.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}, []string{"pool"}),
		slotCuts: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "xet", Name: "upload_slots_cut_total",
			Help: "Slots taken back (408) from uploads too slow to hold them while another user waited, by pool."}, []string{"pool"}),
	}
	reg.MustRegister(m.requests, m.latency, m.bridge, m.reconstructions, m.backendLatency, m.backendErrors, m.slotWait, m.slotCuts,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Observer is the store.Observer that counts the store's work in m (store.Options.Observe).
func (m *Metrics) Observer() store.Observer { return storeObserver{m} }

type storeObserver struct{ m *Metrics }

func (o storeObserver) BackendOp(op string, d time.Duration, err error) {
	o.m.backendLatency.WithLabelValues(op).Observe(d.Seconds())
	if err != nil && !errors.Is(err, blob.ErrNotFound) {
		o.m.backendErrors.WithLabelValues(op).Inc()
	}
}

func (o storeObserver) Registered(newFiles int, deduped uint64) {
	o.m.files.Add(float64(newFiles))
	o.m.deduped.Add(float64(deduped))
}

func (o storeObserver) Collected(deleted int64) {
	o.m.gcRuns.Inc()
	o.m.gcReclaimed.Add(float64(deleted))
}

// slots registers the gauges of upload slots in use (xorb uploads and basic-transfer ingests), and
// of the requests waiting for a slot of each pool, and has the pools report their waits and cuts.
func (m *Metrics) slots(s *Server) {
	if m == nil {
		return
	}
	for _, p := range []*slotPool{s.xorbs, s.ingest, s.shardBodies, s.shards} {
		p.metrics = m
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "xet", Name: "upload_slot_waiters",
			Help:        "Requests waiting for a slot, by pool: uploads wait with their bodies unread, and a plain git-lfs client gives up after 30 s (lfs.activitytimeout).",
			ConstLabels: prometheus.Labels{"pool": p.name}}, func() float64 { return float64(p.waiting()) }))
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "xet", Name: "upload_slots_in_use",
		Help: "Upload slots held: xorb uploads being read and checked, plus basic-transfer uploads being chunked."},
		func() float64 { return float64(s.xorbs.inUse() + s.ingest.inUse()) }))
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "xet", Name: "upload_slots",
		Help: "Upload slots in all."}, func() float64 { return float64(s.xorbs.size + s.ingest.size) }))
}

// slotWaited records a wait for a slot of pool, however it ended.
func (m *Metrics) slotWaited(pool string, d time.Duration) {
	if m == nil {
		return
	}
	m.slotWait.WithLabelValues(pool).Observe(d.Seconds())
}

// slotCut counts a slot of pool taken back.
func (m *Metrics) slotCut(pool string) {
	if m == nil {
		return
	}
	m.slotCuts.WithLabelValues(pool).Inc()
}

func (m *Metrics) request(route, method string, code int, d time.Duration, in, out int64) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(route, methodLabel(method), strconv.Itoa(code)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
	m.received.Add(float64(in))
	m.sent.Add(float64(out))
}

// methodLabel is method when HTTP defines it, else "other": a label never takes a value a client
// invents (each would be a series of its own).
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete,
		http.MethodPatch, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

func (m *Metrics) xorbStored(inserted bool, bytes int64) {
	if m != nil && inserted {
		m.xorbs.Inc()
		m.xorbBytes.Add(float64(bytes))
	}
}

func (m *Metrics) shardStored() {
	if m != nil {
		m.shards.Inc()
	}
}

func (m *Metrics) dedupeQuery(hit bool) {
	if m == nil {
		return
	}
	m.dedupeQueries.Inc()
	if hit {
		m.dedupeHits.Inc()
	}
}

func (m *Metrics) bridged(direction string) {
	if m != nil {
		m.bridge.WithLabelValues(direction).Inc()
	}
}

func (m *Metrics) reconstruction(version string) {
	if m != nil {
		m.reconstructions.WithLabelValues(version).Inc()
	}
}

func (m *Metrics) quotaRefused() {
	if m != nil {
		m.quotaRefusals.Inc()
	}
}
