package seats

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// layout is a valid event of sections×rows×perRow seats, one block each.
func layout(sections, rows, perRow int) Event {
	ev := Event{ID: "ev", Name: "Event"}
	for s := range sections {
		sec := Section{ID: "S" + strconv.Itoa(s+1), Name: "Section", Blocks: []Block{{ID: "1"}}}
		for r := range rows {
			row := Row{ID: strconv.Itoa(r + 1)}
			for n := 1; n <= perRow; n++ {
				row.Seats = append(row.Seats, SeatSpec{Number: n})
			}
			sec.Blocks[0].Rows = append(sec.Blocks[0].Rows, row)
		}
		ev.Sections = append(ev.Sections, sec)
	}
	return ev
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		edit   func(ev *Event)
		reason string // in the error; "" for a valid layout
	}{
		{"valid", func(*Event) {}, ""},
		{"stadium of 600,000 seats", func(ev *Event) { *ev = layout(200, 150, 20) }, ""},
		{"the limits themselves", func(ev *Event) {
			*ev = layout(1, 1, 1)
			ev.ID, ev.Name = strings.Repeat("e", MaxEventIDBytes), strings.Repeat("n", MaxNameBytes)
			sec := &ev.Sections[0]
			sec.ID, sec.Shape = strings.Repeat("s", MaxPartIDBytes), strings.Repeat("M", MaxShapeBytes)
			sec.Blocks[0].Rows[0].Seats[0].Number = MaxSeatNumber
		}, ""},
		{"no sections", func(ev *Event) { ev.Sections = nil }, "an event needs sections"},
		{"bad event id", func(ev *Event) { ev.ID = "a b" }, `event id "a b"`},
		{"long event id", func(ev *Event) { ev.ID = strings.Repeat("e", MaxEventIDBytes+1) }, "event id"},
		{"long event name", func(ev *Event) { ev.Name = strings.Repeat("n", 1<<20) }, "event name is 1048576 bytes, at most 200"},
		{"duplicate section", func(ev *Event) { ev.Sections[1].ID = "S1" }, "section S1 appears twice"},
		{"empty section", func(ev *Event) { ev.Sections[1].Blocks = nil }, "section S2 has no blocks"},
		{"empty block", func(ev *Event) { ev.Sections[1].Blocks[0].Rows = nil }, "section S2 block 1 has no rows"},
		{"empty row", func(ev *Event) { ev.Sections[0].Blocks[0].Rows[1].Seats = nil }, "section S1 block 1 row 2 has no seats"},
		{"duplicate block", func(ev *Event) {
			ev.Sections[0].Blocks = append(ev.Sections[0].Blocks, ev.Sections[0].Blocks[0])
		}, "section S1 block 1 appears twice"},
		{"duplicate row", func(ev *Event) { ev.Sections[0].Blocks[0].Rows[1].ID = "1" }, "section S1 block 1 row 1 appears twice"},
		{"duplicate seat", func(ev *Event) { ev.Sections[0].Blocks[0].Rows[0].Seats[1].Number = 1 }, "seat S1-1-1-1 appears twice"},
		{"seat number 0", func(ev *Event) { ev.Sections[0].Blocks[0].Rows[0].Seats[0].Number = 0 }, "seat number 0 is not 1 to 9999"},
		{"seat number too high", func(ev *Event) { ev.Sections[0].Blocks[0].Rows[0].Seats[0].Number = MaxSeatNumber + 1 }, "seat number 10000"},
		{"section id with '-'", func(ev *Event) { ev.Sections[0].ID = "A-1" }, `section id "A-1"`},
		{"empty row id", func(ev *Event) { ev.Sections[0].Blocks[0].Rows[0].ID = "" }, `section S1 block 1 row id ""`},
		{"long block id", func(ev *Event) { ev.Sections[0].Blocks[0].ID = strings.Repeat("b", MaxPartIDBytes+1) }, "section S1 block id"},
		{"long section name", func(ev *Event) { ev.Sections[0].Name = strings.Repeat("n", MaxNameBytes+1) }, "section S1 name is 201 bytes"},
		{"long category", func(ev *Event) { ev.Sections[0].Category = strings.Repeat("c", MaxLabelBytes+1) }, "section S1 category"},
		{"long shape", func(ev *Event) { ev.Sections[0].Shape = strings.Repeat("M", MaxShapeBytes+1) }, "section S1 shape"},
		{"long seat category", func(ev *Event) {
			ev.Sections[0].Blocks[0].Rows[0].Seats[0].Category = strings.Repeat("c", MaxLabelBytes+1)
		}, "seat S1-1-1-1 category"},
		{"escapes beyond the stored event's bound", func(ev *Event) {
			*ev = layout(MaxSections, 1, 1)
			for i := range ev.Sections {
				ev.Sections[i].Shape = strings.Repeat("<", MaxShapeBytes)
			}
		}, "the event without its rows, as JSON, is"},
		{"the default seats a session", func(ev *Event) { ev.MaxSeats = 0 }, ""},
		{"the most seats a session", func(ev *Event) { ev.MaxSeats = MaxSeatsPerHold }, ""},
		{"too many seats a session", func(ev *Event) { ev.MaxSeats = MaxSeatsPerHold + 1 }, "max_seats_per_session 21: 1 to 20"},
		{"negative seats a session", func(ev *Event) { ev.MaxSeats = -1 }, "max_seats_per_session -1"},
		{"free seats", func(ev *Event) { ev.Sections[0].Price = 0 }, ""},
		{"negative section price", func(ev *Event) { ev.Sections[1].Price = -1 }, "section S2 price -1 is negative"},
		{"negative seat price", func(ev *Event) { ev.Sections[0].Blocks[0].Rows[0].Seats[2].Price = -500 }, "seat S1-1-1-3 price -500 is negative"},
		{"too many sections", func(ev *Event) { *ev = layout(MaxSections+1, 1, 1) }, "201 sections, at most 200"},
		{"too many blocks", func(ev *Event) {
			sec := &ev.Sections[0]
			for i := range MaxBlocksPerSection {
				sec.Blocks = append(sec.Blocks, Block{ID: "b" + strconv.Itoa(i), Rows: sec.Blocks[0].Rows})
			}
		}, "section S1 has 17 blocks, at most 16"},
		{"too many rows", func(ev *Event) { *ev = layout(1, MaxRowsPerSection+1, 1) }, "section S1 has more than 200 rows"},
		{"too many seats in a row", func(ev *Event) { *ev = layout(1, 1, MaxSeatsPerRow+1) }, "section S1 block 1 row 1 has 501 seats, at most 500"},
		{"too many seats", func(ev *Event) { *ev = layout(MaxSections, MaxRowsPerSection, 26) }, "more than 1000000 seats"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := layout(2, 2, 3)
			tt.edit(&ev)
			err := Validate(ev)
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("got %v, want ErrInvalid naming %q", err, tt.reason)
			}
		})
	}
}

// TestHeader: the stored event keeps every section's fields but its
// blocks, and leaves the imported event as it was.
func TestHeader(t *testing.T) {
	ev := layout(2, 1, 1)
	ev.Sections[0].Shape = "M0 0"
	h := ev.Header()
	if len(h.Sections) != 2 || h.Sections[0].Blocks != nil || h.Sections[0].Shape != "M0 0" || h.Sections[1].ID != "S2" {
		t.Fatalf("header %+v", h)
	}
	if ev.Sections[0].Blocks == nil {
		t.Fatal("Header changed the event")
	}
}

// FuzzValidate: any event JSON is refused with ErrInvalid or valid, never
// a panic; a valid one expands to distinct seat ids, within the limits.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		`{"id":"e","sections":[{"id":"A","blocks":[{"id":"1","rows":[{"id":"1","seats":[{"number":1},{"number":2}]}]}]}]}`,
		`{"id":"e","sections":[{"id":"A","blocks":[]},{"id":"A"}]}`,
		`{"id":"e","sections":[{"id":"A","blocks":[{"id":"1","rows":[{"id":"1","seats":[{"number":1},{"number":1}]}]}]}]}`,
		`{"id":"","name":"x"}`, `{}`, `{"sections":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var ev Event
		if json.Unmarshal(raw, &ev) != nil {
			return
		}
		if err := Validate(ev); err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("refusal without ErrInvalid: %v", err)
			}
			return
		}
		list := expand(ev)
		seen := make(map[string]bool, len(list))
		for _, s := range list {
			if seen[s.ID] {
				t.Fatalf("valid layout with seat %s twice", s.ID)
			}
			seen[s.ID] = true
		}
		if len(list) == 0 || len(list) > MaxEventSeats {
			t.Fatalf("valid layout of %d seats", len(list))
		}
	})
}
