// Command scalechart turns the JSON of test/scale.sh (issue 44's cost curves) into charts: one SVG
// per (row, metric), the cost against the work on a logarithmic x axis, one line per case and side.
// The SVG is written directly (no plotting dependency): axes, ticks at the measured sizes, a legend.
//
//	go run ./test/scalechart -in scale.json -out docs/scale
package main

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Point is one measured value, as test/scale.sh and test/scale-server.sh write it.
type Point struct {
	Row    string  `json:"row"`
	Case   string  `json:"case"`
	Side   string  `json:"side"`
	X      float64 `json:"x"`
	XUnit  string  `json:"x_unit"`
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
}

// Doc is the document test/scale.sh writes; only the points are read.
type Doc struct {
	Points []Point `json:"points"`
}

// Series is one line of a chart: the points of one case and side, by x.
type Series struct {
	Name   string
	Points []Point
}

// Chart is one (row, metric): its lines.
type Chart struct {
	Row, Metric, XUnit, Unit string
	Series                   []Series
}

func main() {
	in := flag.String("in", "scale.json", "the JSON document test/scale.sh wrote")
	out := flag.String("out", ".", "the directory the SVG files are written to")
	flag.Parse()
	names, err := run(*in, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scalechart:", err)
		os.Exit(1)
	}
	for _, n := range names {
		fmt.Println(n)
	}
}

// run reads the document at in and writes one SVG per chart into out (temp file, then rename),
// returning the paths written.
func run(in, out string) ([]string, error) {
	raw, err := os.ReadFile(in)
	if err != nil {
		return nil, err
	}
	var doc Doc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", in, err)
	}
	charts := Group(doc.Points)
	if len(charts) == 0 {
		return nil, fmt.Errorf("%s: no points", in)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	var names []string
	for _, c := range charts {
		name := filepath.Join(out, c.Row+"-"+c.Metric+".svg")
		if err := writeFile(name, c); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

func writeFile(name string, c Chart) error {
	tmp := name + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = c.SVG(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("%s: %w", name, err)
	}
	return os.Rename(tmp, name)
}

// Group sorts the points into charts, by row and metric, each line's points by x. Points with a
// non-positive x cannot sit on a logarithmic axis and are left out, and so is a chart whose points
// all share one x (row 5's, measured at one size): it has no curve to show, and the table has its
// figures.
func Group(points []Point) []Chart {
	type key struct{ row, metric string }
	byChart := map[key]map[string][]Point{}
	for _, p := range points {
		if p.X <= 0 || math.IsNaN(p.Value) || math.IsInf(p.Value, 0) {
			continue
		}
		k := key{p.Row, p.Metric}
		if byChart[k] == nil {
			byChart[k] = map[string][]Point{}
		}
		name := p.Case + " " + p.Side
		byChart[k][name] = append(byChart[k][name], p)
	}
	var charts []Chart
	for k, lines := range byChart {
		if !spansSizes(lines) {
			continue
		}
		c := Chart{Row: k.row, Metric: k.metric}
		for name, ps := range lines {
			sort.Slice(ps, func(i, j int) bool { return ps[i].X < ps[j].X })
			c.Series = append(c.Series, Series{Name: name, Points: ps})
			c.XUnit, c.Unit = ps[0].XUnit, ps[0].Unit
		}
		sort.Slice(c.Series, func(i, j int) bool { return c.Series[i].Name < c.Series[j].Name })
		charts = append(charts, c)
	}
	sort.Slice(charts, func(i, j int) bool {
		if charts[i].Row != charts[j].Row {
			return charts[i].Row < charts[j].Row
		}
		return charts[i].Metric < charts[j].Metric
	})
	return charts
}

// spansSizes reports whether the lines' points have more than one x between them.
func spansSizes(lines map[string][]Point) bool {
	first := math.NaN()
	for _, ps := range lines {
		for _, p := range ps {
			if math.IsNaN(first) {
				first = p.X
			} else if p.X != first {
				return true
			}
		}
	}
	return false
}

// The drawing area, in SVG units.
const (
	width, height          = 640.0, 400.0
	left, right, top, foot = 80.0, 190.0, 40.0, 50.0
)

var colors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// SVG writes the chart as a standalone SVG document.
func (c Chart) SVG(w io.Writer) error {
	if len(c.Series) == 0 {
		return errors.New("a chart with no line")
	}
	xs, ymax := c.extent()
	sx := func(x float64) float64 {
		lo, hi := math.Log10(xs[0]), math.Log10(xs[len(xs)-1])
		if hi == lo {
			return left + (width-left-right)/2
		}
		return left + (math.Log10(x)-lo)/(hi-lo)*(width-left-right)
	}
	sy := func(y float64) float64 { return height - foot - y/ymax*(height-top-foot) }
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%g" y="22" font-size="14">%s</text>`+"\n", left, esc(c.Row+": "+c.Metric+" ("+c.Unit+") against "+c.XUnit))
	c.axes(&b, xs, ymax, sx, sy)
	for i, s := range c.Series {
		color := colors[i%len(colors)]
		var pts []string
		for _, p := range s.Points {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", sx(p.X), sy(p.Value)))
		}
		fmt.Fprintf(&b, `<g class="series" data-series="%s" stroke="%s" fill="%s">`+"\n", esc(s.Name), color, color)
		fmt.Fprintf(&b, `<polyline fill="none" stroke-width="2" points="%s"/>`+"\n", strings.Join(pts, " "))
		for _, p := range s.Points {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3"><title>%s</title></circle>`+"\n", sx(p.X), sy(p.Value), esc(fmt.Sprintf("%s: %g %s at %g %s", s.Name, p.Value, p.Unit, p.X, p.XUnit)))
		}
		ly := top + 10 + float64(i)*18
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke-width="2"/><text x="%g" y="%g" stroke="none" fill="black">%s</text>`+"\n",
			width-right+15, ly, width-right+35, ly, width-right+40, ly+4, esc(s.Name))
		fmt.Fprintf(&b, "</g>\n")
	}
	fmt.Fprintf(&b, "</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// extent returns the distinct x values of every line, ascending, and the top of the y axis.
func (c Chart) extent() ([]float64, float64) {
	seen := map[float64]bool{}
	var xs []float64
	ymax := 0.0
	for _, s := range c.Series {
		for _, p := range s.Points {
			if !seen[p.X] {
				seen[p.X] = true
				xs = append(xs, p.X)
			}
			ymax = math.Max(ymax, p.Value)
		}
	}
	sort.Float64s(xs)
	if ymax <= 0 {
		ymax = 1
	}
	return xs, niceCeil(ymax * 1.05)
}

// axes draws both axes: x ticks at the measured sizes (those at least 32 units from the last one),
// y ticks at fifths of the top.
func (c Chart) axes(b *strings.Builder, xs []float64, ymax float64, sx, sy func(float64) float64) {
	x0, y0 := left, height-foot
	fmt.Fprintf(b, `<g stroke="black"><line x1="%g" y1="%g" x2="%g" y2="%g"/><line x1="%g" y1="%g" x2="%g" y2="%g"/></g>`+"\n",
		x0, y0, width-right, y0, x0, y0, x0, top)
	last := math.Inf(-1)
	for i := range xs {
		x := sx(xs[i])
		if x-last < 32 { // labels closer than that overlap (the high end of a log axis)
			continue
		}
		last = x
		fmt.Fprintf(b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="black"/><text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n",
			x, y0, x, y0+5, x, y0+18, esc(fmt.Sprintf("%g", xs[i])))
	}
	fmt.Fprintf(b, `<text x="%g" y="%g" text-anchor="middle">%s (log scale)</text>`+"\n", (left+width-right)/2, height-10, esc(c.XUnit))
	for i := 0; i <= 5; i++ {
		v := ymax * float64(i) / 5
		y := sy(v)
		fmt.Fprintf(b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%s</text>`+"\n",
			x0, y, width-right, y, x0-6, y+4, esc(fmt.Sprintf("%.3g", v)))
	}
	fmt.Fprintf(b, `<text x="16" y="%g" transform="rotate(-90 16 %g)" text-anchor="middle">%s</text>`+"\n", (top+y0)/2, (top+y0)/2, esc(c.Unit))
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
