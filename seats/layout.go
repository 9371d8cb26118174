package seats

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Stadium generates a realistic event: a lower ring of 12 sections and an
// upper ring of 20 around a pitch, each drawn as an SVG path on a 1000×700
// map, two blocks a section, prices by ring and by side. With the default
// sizes it has exactly 20,000 seats.
func Stadium(id, name string, startsAt time.Time) Event {
	ev := Event{ID: id, Name: name, StartsAt: startsAt, MaxSeats: 6,
		HoldWindow: Duration(10 * time.Minute), CheckoutWindow: Duration(7 * time.Minute)}
	rings := []struct {
		prefix         string
		sections, rows int
		seatsPerRow    int
		inner, outer   float64
		category       string
		price          int64
	}{
		{"L", 12, 20, 35, 200, 290, "lower", 8900},
		{"U", 20, 20, 29, 300, 390, "upper", 4900},
	}
	for _, ring := range rings {
		for i := range ring.sections {
			a0 := 2 * math.Pi * float64(i) / float64(ring.sections)
			a1 := 2 * math.Pi * float64(i+1) / float64(ring.sections)
			sec := Section{
				ID:       fmt.Sprintf("%s%d", ring.prefix, i+1),
				Name:     fmt.Sprintf("%s %d", strings.ToUpper(ring.category[:1])+ring.category[1:], i+1),
				Category: ring.category,
				Price:    ring.price + sidePremium(a0, a1),
				Hot:      ring.prefix == "L" && sidePremium(a0, a1) > 0,
				Shape:    arc(a0+0.01, a1-0.01, ring.inner, ring.outer),
			}
			for b := range 2 {
				blk := Block{ID: fmt.Sprintf("%d", b+1)}
				for r := range ring.rows / 2 {
					row := Row{ID: fmt.Sprintf("%d", b*(ring.rows/2)+r+1)}
					for n := 1; n <= ring.seatsPerRow; n++ {
						row.Seats = append(row.Seats, SeatSpec{Number: n})
					}
					blk.Rows = append(blk.Rows, row)
				}
				sec.Blocks = append(sec.Blocks, blk)
			}
			ev.Sections = append(ev.Sections, sec)
		}
	}
	return ev
}

// sidePremium: sections along the long sides of the pitch cost more.
func sidePremium(a0, a1 float64) int64 {
	mid := (a0 + a1) / 2
	if math.Abs(math.Sin(mid)) > 0.7 {
		return 3000
	}
	return 0
}

// arc is an annular sector around (500, 350), squashed into an oval.
func arc(a0, a1, inner, outer float64) string {
	const cx, cy, squash = 500.0, 350.0, 0.85
	pt := func(a, r float64) string {
		return fmt.Sprintf("%.1f %.1f", cx+r*math.Cos(a), cy+squash*r*math.Sin(a))
	}
	return fmt.Sprintf("M%s A%.0f %.0f 0 0 1 %s L%s A%.0f %.0f 0 0 0 %s Z",
		pt(a0, outer), outer, squash*outer, pt(a1, outer), pt(a1, inner), inner, squash*inner, pt(a0, inner))
}
