package simulate

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// The plot's geometry, in SVG units.
const (
	svgWidth   = 760
	svgPanel   = 300 // a panel's height
	svgLeft    = 70  // room for the y axis's labels
	svgRight   = 150 // room for the legend
	svgTop     = 40
	svgBottom  = 45 // room for the x axis's labels
	svgTicks   = 5
	svgPanels  = 2
	svgHeight  = svgPanels * svgPanel
	svgPlotW   = svgWidth - svgLeft - svgRight
	svgPlotH   = svgPanel - svgTop - svgBottom
	svgRadius  = 3
	svgFontPx  = 12
	svgTitlePx = 14
)

// svgColors are the configs' colours, in order (then again).
var svgColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"}

// svgPoint is one hour of one config: its arrival rate and a figure.
type svgPoint struct{ x, y float64 }

// svgSeries is a config's points in one panel, by rate.
func svgSeries(c *ConfigReport, y func(h *HourReport) float64) []svgPoint {
	var ps []svgPoint
	for i := range c.Hours {
		h := &c.Hours[i]
		if h.Joins == 0 || h.Matches == 0 {
			continue
		}
		ps = append(ps, svgPoint{x: float64(h.Joins) / 3600, y: y(h)})
	}
	slices.SortFunc(ps, func(a, b svgPoint) int {
		if a.x != b.x {
			if a.x < b.x {
				return -1
			}
			return 1
		}
		if a.y < b.y {
			return -1
		}
		if a.y > b.y {
			return 1
		}
		return 0
	})
	return ps
}

// niceStep is a round step that splits span into about n parts.
func niceStep(span float64, n int) float64 {
	if span <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// axis is a linear scale from [lo, hi] to pixels, with round ticks.
type axis struct{ lo, hi, step float64 }

func newAxis(lo, hi float64) axis {
	if hi <= lo {
		hi = lo + 1
	}
	step := niceStep(hi-lo, svgTicks)
	return axis{lo: math.Floor(lo/step) * step, hi: math.Ceil(hi/step) * step, step: step}
}

func (a axis) at(v float64, from, to float64) float64 {
	return from + (v-a.lo)/(a.hi-a.lo)*(to-from)
}

func (a axis) ticks() []float64 {
	var ts []float64
	for i := 0; ; i++ {
		v := a.lo + float64(i)*a.step
		if v > a.hi+a.step/1e6 || i > 100 {
			return ts
		}
		ts = append(ts, v)
	}
}

// tick formats a tick's value briefly.
func tick(v float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

// xmlText escapes s for the SVG's text.
func xmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// WriteSVG draws the report: wait p50 and spread p50 of each hour of the
// day against that hour's arrival rate, a line per config, as a
// standalone SVG.
func (r *Report) WriteSVG(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="%d">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight, svgFontPx)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgWidth, svgHeight)
	panels := []struct {
		title string
		y     func(h *HourReport) float64
	}{
		{"wait p50 (s) by the hour's arrival rate", func(h *HourReport) float64 { return h.WaitP50 }},
		{"skill spread p50 by the hour's arrival rate", func(h *HourReport) float64 { return h.SpreadP50 }},
	}
	for pi, p := range panels {
		series := make([][]svgPoint, len(r.Configs))
		xlo, xhi, yhi := math.Inf(1), math.Inf(-1), 0.0
		for i := range r.Configs {
			series[i] = svgSeries(&r.Configs[i], p.y)
			for _, pt := range series[i] {
				xlo, xhi, yhi = min(xlo, pt.x), max(xhi, pt.x), max(yhi, pt.y)
			}
		}
		if math.IsInf(xlo, 1) {
			xlo, xhi = 0, 1
		}
		xa, ya := newAxis(xlo, xhi), newAxis(0, yhi)
		top := float64(pi*svgPanel + svgTop)
		bottom := top + svgPlotH
		left, right := float64(svgLeft), float64(svgLeft+svgPlotW)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="%d" font-weight="bold">%s</text>`+"\n", svgLeft, top-14, svgTitlePx, xmlText(p.title))
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%d" height="%d" fill="none" stroke="#444"/>`+"\n", left, top, svgPlotW, svgPlotH)
		for _, t := range ya.ticks() {
			y := ya.at(t, bottom, top)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, right, y)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, y+4, tick(t))
		}
		for _, t := range xa.ticks() {
			x := xa.at(t, left, right)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, bottom)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, bottom+16, tick(t))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">joins/s in the hour</text>`+"\n", (left+right)/2, bottom+34)
		for i, ps := range series {
			color := svgColors[i%len(svgColors)]
			pts := make([]string, len(ps))
			for j, pt := range ps {
				pts[j] = fmt.Sprintf("%.1f,%.1f", xa.at(pt.x, left, right), ya.at(pt.y, bottom, top))
			}
			fmt.Fprintf(&b, `<polyline class="config" fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
			for _, pt := range pts {
				x, y, _ := strings.Cut(pt, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="%d" fill="%s"/>`+"\n", x, y, svgRadius, color)
			}
			ly := top + 10 + float64(i)*18
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/>`+"\n", right+12, ly, right+32, ly, color)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", right+38, ly+4, xmlText(r.Configs[i].Name))
		}
	}
	b.WriteString("</svg>\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write svg: %w", err)
	}
	return nil
}
