package sim

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteSVG draws two panels: each visitor's arrival against admission time
// (a sample), and the distribution of admission times per group, paired runs.
func (r Report) WriteSVG(w io.Writer) error {
	const width, height, pad = 1100, 480, 60
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")

	// Panel 1: arrival vs admission, minutes from the start.
	vs := r.Baseline.Visitors
	xmin, xmax, ymax := 0.0, 0.0, 0.0
	for _, v := range vs {
		xmin = math.Min(xmin, v.Arrive.Minutes())
		xmax = math.Max(xmax, v.Arrive.Minutes())
		ymax = math.Max(ymax, v.Admitted.Minutes())
	}
	p1 := panel{x: pad, y: 40, w: 460, h: 360, xmin: xmin, xmax: xmax, ymin: 0, ymax: ymax}
	p1.frame(&b, "arrival (min from sale start)", "admitted (min from sale start)", "Who gets in when: the pre-queue is a lottery; nobody gets in before arriving")
	step := max(1, len(vs)/3000)
	for i := 0; i < len(vs); i += step {
		v := vs[i]
		if !v.Done {
			continue
		}
		colour := "#1f77b4"
		if !v.PreQueue {
			colour = "#ff7f0e"
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="1.6" fill="%s" fill-opacity="0.5"/>`+"\n", p1.px(v.Arrive.Minutes()), p1.py(v.Admitted.Minutes()), colour)
	}
	legend(&b, p1.x+10, p1.y+10, []string{"#1f77b4", "#ff7f0e"}, []string{"pre-queue", "after the start"})

	// Panel 2: CDF of waits for each group, baseline and behaviour runs.
	type series struct {
		label, colour, dash string
		waits               []float64
	}
	var all []series
	palette := []string{"#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"}
	var twins []float64
	for k := FastRetrier; k < kinds; k++ {
		if r.Runs[k] == nil { // not run (Config.Only)
			continue
		}
		var got []float64
		for i, v := range r.Runs[k].Visitors {
			b0 := r.Baseline.Visitors[i]
			if v.Kind != k || !v.Done || !b0.Done {
				continue
			}
			from := max(v.Arrive, 0)
			twins = append(twins, (b0.Admitted - from).Minutes())
			got = append(got, (v.Admitted - from).Minutes())
		}
		all = append(all, series{k.String(), palette[int(k-FastRetrier)%len(palette)], "", got})
	}
	all = append(all, series{"their honest twins", "#000000", "4 3", twins})
	xm := 0.0
	for _, s := range all {
		for _, x := range s.waits {
			xm = math.Max(xm, x)
		}
	}
	p2 := panel{x: 600, y: 40, w: 460, h: 360, xmin: 0, xmax: xm, ymin: 0, ymax: 1}
	p2.frame(&b, "wait (min; from the start for the pre-queue)", "share admitted", "Each strategy against the same visitors honest")
	var colours, labels, dashes []string
	for _, s := range all {
		if len(s.waits) == 0 {
			continue
		}
		slices.Sort(s.waits)
		var pts []string
		n := len(s.waits)
		for i := 0; i < n; i += max(1, n/200) {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", p2.px(s.waits[i]), p2.py(float64(i+1)/float64(n))))
		}
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", p2.px(s.waits[n-1]), p2.py(1)))
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="%s"/>`+"\n", s.colour, s.dash, strings.Join(pts, " "))
		colours, labels, dashes = append(colours, s.colour), append(labels, s.label), append(dashes, s.dash)
	}
	legend(&b, p2.x+p2.w-200, p2.y+p2.h-20*float64(len(labels))-10, colours, labels, dashes...)
	c := r.Baseline.Config
	fmt.Fprintf(&b, `<text x="%d" y="%d">%d pre-queue + %d arrivals, %.0f admissions/s, jitter 0-%v, seed %d, sale lasted %v</text>`+"\n",
		pad, height-20, c.PreQueue, c.Arrivals, c.Rate, c.Jitter, c.Seed, r.Baseline.Duration.Round(time.Second))
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

type panel struct {
	x, y, w, h             float64
	xmin, xmax, ymin, ymax float64
}

func (p panel) px(v float64) float64 {
	if p.xmax == p.xmin {
		return p.x
	}
	return p.x + (v-p.xmin)/(p.xmax-p.xmin)*p.w
}

func (p panel) py(v float64) float64 {
	if p.ymax == p.ymin {
		return p.y + p.h
	}
	return p.y + p.h - (v-p.ymin)/(p.ymax-p.ymin)*p.h
}

func (p panel) frame(b *strings.Builder, xlabel, ylabel, title string) {
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`+"\n", p.x, p.y, p.w, p.h)
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", p.x, p.y-12, title)
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`+"\n", p.x+p.w/2, p.y+p.h+36, xlabel)
	fmt.Fprintf(b, `<text transform="translate(%.0f,%.0f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", p.x-42, p.y+p.h/2, ylabel)
	for i := 0; i <= 4; i++ {
		xv := p.xmin + float64(i)/4*(p.xmax-p.xmin)
		yv := p.ymin + float64(i)/4*(p.ymax-p.ymin)
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle" fill="#444">%s</text>`+"\n", p.px(xv), p.y+p.h+16, tick(xv, p.xmax-p.xmin))
		fmt.Fprintf(b, `<text x="%.0f" y="%.1f" text-anchor="end" fill="#444">%s</text>`+"\n", p.x-6, p.py(yv)+4, tick(yv, p.ymax-p.ymin))
	}
}

// tick formats an axis value, showing float noise around zero as 0.
func tick(v, span float64) string {
	if math.Abs(v) < span*1e-6 {
		v = 0
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// legend draws a line sample (dashed where dashes[i] is set) per label.
func legend(b *strings.Builder, x, y float64, colours, labels []string, dashes ...string) {
	for i, l := range labels {
		yy := y + float64(i)*20
		dash := ""
		if i < len(dashes) {
			dash = dashes[i]
		}
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="3" stroke-dasharray="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			x, yy+6, x+22, yy+6, colours[i], dash, x+28, yy+10, l)
	}
}
