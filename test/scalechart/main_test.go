package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// A small document as test/scale.sh writes it: two rows, one with two cases and two sides.
const fixture = `{"run": {"date": "2026-11-29T07:00:00Z", "commit": "x", "machine": {"nproc": 2}, "knobs": {}},
"points": [
 {"row":"many-files","case":"embedded","side":"agent","x":1000,"x_unit":"files","metric":"push_s","value":2.5,"unit":"s"},
 {"row":"many-files","case":"embedded","side":"agent","x":50000,"x_unit":"files","metric":"push_s","value":120,"unit":"s"},
 {"row":"many-files","case":"embedded","side":"agent","x":10000,"x_unit":"files","metric":"push_s","value":22,"unit":"s"},
 {"row":"many-files","case":"embedded","side":"git-lfs","x":1000,"x_unit":"files","metric":"push_s","value":2,"unit":"s"},
 {"row":"many-files","case":"embedded","side":"git-lfs","x":50000,"x_unit":"files","metric":"push_s","value":100,"unit":"s"},
 {"row":"many-files","case":"server","side":"agent","x":1000,"x_unit":"files","metric":"push_s","value":3,"unit":"s"},
 {"row":"many-files","case":"server","side":"git-lfs","x":1000,"x_unit":"files","metric":"push_s","value":4,"unit":"s"},
 {"row":"history","case":"server","side":"agent","x":1,"x_unit":"versions","metric":"push_bytes_sent","value":134217728,"unit":"bytes"},
 {"row":"history","case":"server","side":"agent","x":50,"x_unit":"versions","metric":"push_bytes_sent","value":700000,"unit":"bytes"},
 {"row":"index","case":"10000000-entries","side":"xet-server","x":10000000,"x_unit":"entries","metric":"query_p99_ms","value":2.3,"unit":"ms"}
]}`

// svgDoc is what the test reads back: each series' name, its polyline's points and its markers.
type svgDoc struct {
	XMLName xml.Name `xml:"svg"`
	Groups  []struct {
		Class    string `xml:"class,attr"`
		Series   string `xml:"data-series,attr"`
		Polyline struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
		Circles []struct{} `xml:"circle"`
	} `xml:"g"`
}

func TestChartsAreWellFormedWithTheirSeries(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "scale.json")
	if err := os.WriteFile(in, []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "charts")
	names, err := run(in, out)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(out, "history-push_bytes_sent.svg"), filepath.Join(out, "many-files-push_s.svg")}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("wrote %v, want %v", names, want)
	}
	series := readSeries(t, want[1])
	wantSeries := map[string]int{"embedded agent": 3, "embedded git-lfs": 2, "server agent": 1, "server git-lfs": 1}
	if len(series) != len(wantSeries) {
		t.Fatalf("series %v, want %v", series, wantSeries)
	}
	for name, n := range wantSeries {
		if series[name] != n {
			t.Errorf("series %q has %d points, want %d", name, series[name], n)
		}
	}
	if h := readSeries(t, want[0]); len(h) != 1 || h["server agent"] != 2 {
		t.Errorf("history chart's series: %v", h)
	}
	entries, _ := os.ReadDir(out)
	if len(entries) != 2 {
		t.Errorf("the output dir holds %d files, want the 2 charts (no temp file left)", len(entries))
	}
}

// readSeries checks that the file is well-formed XML (every token decodes) and returns the number
// of points of each series, after checking that the polyline and the markers agree and that the
// polyline goes left to right (the points sorted by size).
func readSeries(t *testing.T, name string) map[string]int {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(string(raw)))
	for {
		if _, err := dec.Token(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", name, err)
		}
	}
	var doc svgDoc
	if err := xml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	got := map[string]int{}
	for _, g := range doc.Groups {
		if g.Class != "series" {
			continue
		}
		pts := strings.Fields(g.Polyline.Points)
		if len(pts) != len(g.Circles) {
			t.Errorf("%s: series %q has %d polyline points and %d markers", name, g.Series, len(pts), len(g.Circles))
		}
		var xs []float64
		for _, p := range pts {
			var x, y float64
			if _, err := fmt.Sscanf(p, "%g,%g", &x, &y); err != nil {
				t.Fatalf("%s: point %q: %v", name, p, err)
			}
			xs = append(xs, x)
		}
		if !sort.Float64sAreSorted(xs) {
			t.Errorf("%s: series %q goes back on the x axis: %v", name, g.Series, xs)
		}
		got[g.Series] = len(pts)
	}
	return got
}

func TestRefusesADocumentWithoutPoints(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "scale.json")
	if err := os.WriteFile(in, []byte(`{"run": {}, "points": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(in, dir); err == nil || !strings.Contains(err.Error(), "no points") {
		t.Fatalf("err = %v, want one saying there are no points", err)
	}
}
