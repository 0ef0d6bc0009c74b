package webui

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"html/template"
	"strconv"
)

//go:embed pages.html
var pageFiles embed.FS

// pages are the templates of pages.html; html/template escapes every value for where it lands
// (text, attribute, URL query).
var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"bytes": formatBytes,
	"ratio": formatRatio,
	"share": formatShare,
	"exact": exact,
	"time":  formatTime,
	"bar":   func(f float64) string { return strconv.FormatFloat(100*min(max(f, 0), 1), 'f', 1, 64) },
	"style": func() template.CSS { return template.CSS(style) },
}).ParseFS(pageFiles, "pages.html"))

// style is the pages' one stylesheet, inline: the policy (csp) allows it by its hash, and nothing
// else. Presentation goes through classes and SVG attributes, never a style attribute.
const style = `
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1f2328;background:#fff}
header{display:flex;justify-content:space-between;padding:10px 24px;background:#24292f;color:#fff}
header a{color:#fff;font-weight:600;text-decoration:none}
.who{opacity:.8}
main{padding:8px 24px 24px;max-width:1200px}
nav{margin-top:8px;color:#57606a}
h1{font-size:22px;margin:12px 0;word-break:break-all}
h2{font-size:17px;margin:24px 0 8px}
a{color:#0969da}
table{border-collapse:collapse;width:100%}
th,td{padding:5px 8px;border-bottom:1px solid #d0d7de;text-align:left;vertical-align:middle}
th{background:#f6f8fa;font-weight:600}
td.n,th.n{text-align:right;white-space:nowrap}
td.name{word-break:break-all}
code{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all}
.muted{color:#6e7781}
.note{color:#57606a;max-width:900px}
dl.summary{display:flex;flex-wrap:wrap;gap:12px;margin:0}
dl.summary div{border:1px solid #d0d7de;border-radius:6px;padding:8px 14px;min-width:120px}
dt{color:#57606a;font-size:12px}
dd{margin:2px 0 0;font-size:17px;font-weight:600}
svg.bar{vertical-align:middle;margin-left:6px}
.bar-bg{fill:#eaeef2}
.bar-fg{fill:#1a7f37}
svg.chart{max-width:100%;height:auto;border:1px solid #d0d7de;border-radius:6px}
.axis line{stroke:#eaeef2}
.axis text{font-size:11px;fill:#57606a}
.yl{text-anchor:end;dominant-baseline:middle}
.xs{text-anchor:start}
.xm{text-anchor:middle}
.xe{text-anchor:end}
polyline{fill:none;stroke-width:2;stroke-linejoin:round}
polyline.logical{stroke-width:5;stroke-opacity:.6}
.logical{stroke:#0969da}
.stored{stroke:#1a7f37}
line.logical,line.stored{stroke-width:3}
.legend{color:#57606a}
.pager{margin-top:12px}
footer{padding:16px 24px;color:#6e7781;font-size:12px;border-top:1px solid #d0d7de;max-width:1200px}
`

// csp allows the pages' inline style (by its hash) and nothing else: no script, no other
// resource, no frame, no form, no base.
var csp = "default-src 'none'; style-src '" + styleHash() + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

func styleHash() string {
	sum := sha256.Sum256([]byte(style))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// Titles of the pages, for the top template.

func (indexPage) Title() string   { return "Repositories" }
func (p *repoPage) Title() string { return p.Shown }
func (errorPage) Title() string   { return "Error" }
