package webui

import (
	"strconv"
	"strings"
	"time"

	"github.com/git-xet-transfer/git-xet-transfer/xet/store"
)

// chart is the SVG of a repository's logical bytes (the sizes of its objects, summed in the order
// they were registered) against its stored bytes (the new bytes each registration brought,
// summed), over time: two step lines in a viewBox of chartW×chartH. Its fields are numbers and
// labels only; the template writes the elements.
type chart struct {
	// The geometry: the viewBox, the plot's left and right ends, where the labels go.
	W, H, L, R, YLabelX, XLabelY int
	Logical, Stored              string // polyline points "x,y x,y …"
	XTicks, YTicks               []tick
	// Last values, for the legend and the page's checks.
	LastLogical, LastStored uint64
	Records                 int
}

type tick struct {
	At    string // the coordinate
	Label string
	Class string // the label's anchor: xs (start), xm (middle), xe (end)
}

const (
	chartW, chartH = 800, 300
	plotL, plotT   = 80, 16
	plotW, plotH   = chartW - plotL - 16, chartH - plotT - 40
	// chartPoints bounds the steps drawn: a 10,000-object history stays a small page.
	chartPoints            = 400
	yTickCount, xTickCount = 4, 4
	// The time axis names seconds over less than an hour of history, minutes over less than
	// three days, else days.
	minuteLabelsFrom, dayLabelsFrom    = time.Hour, 72 * time.Hour
	dayLabel, minuteLabel, secondLabel = "2006-01-02", "01-02 15:04", "15:04:05"
)

// buildChart draws history (oldest first); nil when it is empty.
func buildChart(history []store.Registration) *chart {
	n := len(history)
	if n == 0 {
		return nil
	}
	logical, stored := make([]uint64, n), make([]uint64, n)
	var l, s uint64
	for i, r := range history {
		l, s = l+r.Size, s+r.New
		logical[i], stored[i] = l, s
	}
	top := max(logical[n-1], stored[n-1], 1)
	t0, t1 := history[0].Time, history[n-1].Time
	x := func(i int) float64 {
		if span := t1.Sub(t0); span > 0 {
			return plotL + float64(history[i].Time.Sub(t0))/float64(span)*plotW
		}
		return plotL + float64(i+1)/float64(n)*plotW // one instant: spread by order
	}
	y := func(v uint64) float64 { return plotT + plotH - float64(v)/float64(top)*plotH }
	idx := sample(n, chartPoints)
	c := &chart{W: chartW, H: chartH, L: plotL, R: plotL + plotW, YLabelX: plotL - 6, XLabelY: plotT + plotH + 22,
		Logical: steps(idx, x, y, logical), Stored: steps(idx, x, y, stored),
		LastLogical: logical[n-1], LastStored: stored[n-1], Records: n}
	for k := 0; k <= yTickCount; k++ {
		v := top * uint64(k) / yTickCount
		c.YTicks = append(c.YTicks, tick{At: coord(y(v)), Label: formatBytes(v)})
	}
	c.XTicks = timeTicks(t0, t1)
	return c
}

// timeTicks are the labels of the time axis from t0 to t1: xTickCount of them evenly spaced, in
// a unit the span calls for, each label once.
func timeTicks(t0, t1 time.Time) []tick {
	span := t1.Sub(t0)
	layout := secondLabel
	switch {
	case span >= dayLabelsFrom:
		layout = dayLabel
	case span >= minuteLabelsFrom:
		layout = minuteLabel
	}
	if span <= 0 {
		return []tick{{At: coord(plotL + plotW/2), Label: t0.UTC().Format(layout), Class: "xm"}}
	}
	var out []tick
	for k := 0; k < xTickCount; k++ {
		label := t0.Add(span * time.Duration(k) / (xTickCount - 1)).UTC().Format(layout)
		if len(out) > 0 && out[len(out)-1].Label == label {
			continue
		}
		class := "xm"
		switch k {
		case 0:
			class = "xs"
		case xTickCount - 1:
			class = "xe"
		}
		out = append(out, tick{At: coord(plotL + plotW*float64(k)/(xTickCount-1)), Label: label, Class: class})
	}
	return out
}

// sample picks at most k of the indices 0..n-1, evenly, always the last.
func sample(n, k int) []int {
	if n <= k {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := make([]int, 0, k)
	for j := 0; j < k; j++ {
		out = append(out, j*(n-1)/(k-1))
	}
	return out
}

// steps is the polyline of a cumulative series at the indices idx: from the axis at the first
// point, up to each value at its time, flat until the next.
func steps(idx []int, x func(int) float64, y func(uint64) float64, v []uint64) string {
	var b strings.Builder
	b.Grow(len(idx)*24 + 16) // about 12 bytes a point
	point := func(px, py float64) {
		b.WriteString(coord(px))
		b.WriteByte(',')
		b.WriteString(coord(py))
		b.WriteByte(' ')
	}
	prev := y(0)
	for _, i := range idx {
		point(x(i), prev)
		prev = y(v[i])
		point(x(i), prev)
	}
	point(plotL+plotW, prev)
	return strings.TrimSpace(b.String())
}

func coord(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }
