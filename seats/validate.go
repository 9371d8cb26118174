package seats

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
)

// Limits of an event layout. Every import is checked against them before
// a store sees it (Validate), so each store gets only layouts it can keep:
// the stored event (its sections without their rows, Event.Header) stays
// well under DynamoDB's 400 KB item limit — MaxSections × (MaxShapeBytes +
// MaxNameBytes + MaxLabelBytes + MaxPartIDBytes) is under 160 KB, and
// MaxHeaderBytes bounds it after JSON's escapes too — and a 600,000-seat
// stadium fits (200 sections of 150 rows of 20 seats, or 100 sections of
// 60 rows of 100).
const (
	// MaxEventIDBytes bounds an event id: letters, digits, '.', '_', '-'.
	MaxEventIDBytes = 64
	// MaxPartIDBytes bounds a section, block or row id: letters, digits,
	// '.', '_' (no '-': it separates the parts of a seat id).
	MaxPartIDBytes = 16
	// MaxNameBytes bounds the names of an event and of a section.
	MaxNameBytes = 200
	// MaxLabelBytes bounds a category, of a section or of a seat.
	MaxLabelBytes = 64
	// MaxShapeBytes bounds a section's SVG path on the overview map.
	MaxShapeBytes = 512
	// MaxSections bounds the sections of an event.
	MaxSections = 200
	// MaxBlocksPerSection bounds the blocks of a section.
	MaxBlocksPerSection = 16
	// MaxRowsPerSection bounds the rows of a section, over all its blocks.
	MaxRowsPerSection = 200
	// MaxSeatsPerRow bounds the seats of a row.
	MaxSeatsPerRow = 500
	// MaxSeatNumber bounds a seat's number (numbers start at 1).
	MaxSeatNumber = 9999
	// MaxEventSeats bounds the seats of an event.
	MaxEventSeats = 1_000_000
	// MaxHeaderBytes bounds the stored event's JSON (Event.Header): the
	// limits above keep it near 200 KB unless its strings are mostly
	// characters JSON escapes.
	MaxHeaderBytes = 256 << 10
)

var (
	eventIDPattern = regexp.MustCompile(fmt.Sprintf(`^[A-Za-z0-9_.-]{1,%d}$`, MaxEventIDBytes))
	partIDPattern  = regexp.MustCompile(fmt.Sprintf(`^[A-Za-z0-9_.]{1,%d}$`, MaxPartIDBytes))
)

// Validate checks an event's layout against the limits above (and
// max_seats_per_session against MaxSeatsPerHold), its prices (none
// negative) and its structure: section ids unique in the event, block ids in their section,
// row ids in their block, seat numbers in their row. An empty section,
// block or row is refused rather than dropped: it would be listed on the
// map with nothing to sell in it (a closed part of a venue is seats marked
// not_for_sale). Every refusal wraps ErrInvalid and names what it refuses.
func Validate(ev Event) error {
	if !eventIDPattern.MatchString(ev.ID) {
		return invalid("event id %.80q: 1 to %d letters, digits, '.', '_' or '-'", ev.ID, MaxEventIDBytes)
	}
	if err := bounded("event name", ev.Name, MaxNameBytes); err != nil {
		return err
	}
	if ev.MaxSeats < 0 || ev.MaxSeats > MaxSeatsPerHold {
		return invalid("max_seats_per_session %d: 1 to %d (0 or none: the default)", ev.MaxSeats, MaxSeatsPerHold)
	}
	switch n := len(ev.Sections); {
	case n == 0:
		return invalid("an event needs sections")
	case n > MaxSections:
		return invalid("%d sections, at most %d", n, MaxSections)
	}
	total := 0
	ids := make(map[string]bool, len(ev.Sections))
	for _, sec := range ev.Sections {
		if err := partID("section", sec.ID); err != nil {
			return err
		}
		if ids[sec.ID] {
			return invalid("section %s appears twice", sec.ID)
		}
		ids[sec.ID] = true
		n, err := validateSection(sec)
		if err != nil {
			return err
		}
		if total += n; total > MaxEventSeats {
			return invalid("more than %d seats", MaxEventSeats)
		}
	}
	raw, err := json.Marshal(ev.Header())
	if err != nil {
		return invalid("event not encodable: %v", err)
	}
	return bounded("the event without its rows, as JSON,", string(raw), MaxHeaderBytes)
}

// validateSection checks a section whose id is valid and returns its
// number of seats.
func validateSection(sec Section) (int, error) {
	for _, f := range []struct {
		what, v string
		max     int
	}{{"name", sec.Name, MaxNameBytes}, {"category", sec.Category, MaxLabelBytes}, {"shape", sec.Shape, MaxShapeBytes}} {
		if err := bounded("section "+sec.ID+" "+f.what, f.v, f.max); err != nil {
			return 0, err
		}
	}
	if sec.Price < 0 {
		return 0, invalid("section %s price %d is negative", sec.ID, sec.Price)
	}
	switch n := len(sec.Blocks); {
	case n == 0:
		return 0, invalid("section %s has no blocks", sec.ID)
	case n > MaxBlocksPerSection:
		return 0, invalid("section %s has %d blocks, at most %d", sec.ID, n, MaxBlocksPerSection)
	}
	seats, rows := 0, 0
	blocks := make(map[string]bool, len(sec.Blocks))
	for _, blk := range sec.Blocks {
		where := "section " + sec.ID + " block " + blk.ID
		if err := partID("section "+sec.ID+" block", blk.ID); err != nil {
			return 0, err
		}
		if blocks[blk.ID] {
			return 0, invalid("%s appears twice", where)
		}
		blocks[blk.ID] = true
		if len(blk.Rows) == 0 {
			return 0, invalid("%s has no rows", where)
		}
		if rows += len(blk.Rows); rows > MaxRowsPerSection {
			return 0, invalid("section %s has more than %d rows", sec.ID, MaxRowsPerSection)
		}
		ids := make(map[string]bool, len(blk.Rows))
		for _, row := range blk.Rows {
			if err := partID(where+" row", row.ID); err != nil {
				return 0, err
			}
			if ids[row.ID] {
				return 0, invalid("%s row %s appears twice", where, row.ID)
			}
			ids[row.ID] = true
			if err := validateRow(sec.ID, blk.ID, row); err != nil {
				return 0, err
			}
			seats += len(row.Seats)
		}
	}
	return seats, nil
}

func validateRow(section, block string, row Row) error {
	where := "section " + section + " block " + block + " row " + row.ID
	switch n := len(row.Seats); {
	case n == 0:
		return invalid("%s has no seats", where)
	case n > MaxSeatsPerRow:
		return invalid("%s has %d seats, at most %d", where, n, MaxSeatsPerRow)
	}
	numbers := make(map[int]bool, len(row.Seats))
	for _, spec := range row.Seats {
		if spec.Number < 1 || spec.Number > MaxSeatNumber {
			return invalid("%s: seat number %d is not 1 to %d", where, spec.Number, MaxSeatNumber)
		}
		if numbers[spec.Number] {
			return invalid("seat %s appears twice", SeatID(section, block, row.ID, spec.Number))
		}
		numbers[spec.Number] = true
		if spec.Price < 0 {
			return invalid("seat %s price %d is negative", SeatID(section, block, row.ID, spec.Number), spec.Price)
		}
		if len(spec.Category) > MaxLabelBytes {
			return bounded("seat "+SeatID(section, block, row.ID, spec.Number)+" category", spec.Category, MaxLabelBytes)
		}
	}
	return nil
}

func partID(what, id string) error {
	if !partIDPattern.MatchString(id) {
		return invalid("%s id %.40q: 1 to %d letters, digits, '.' or '_'", what, id, MaxPartIDBytes)
	}
	return nil
}

func bounded(what, v string, max int) error {
	if len(v) > max {
		return invalid("%s is %d bytes, at most %d", what, len(v), max)
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}

// expand lists the seats of a valid event (Validate), in layout order.
func expand(ev Event) []Seat {
	n := 0
	for _, sec := range ev.Sections {
		for _, blk := range sec.Blocks {
			for _, row := range blk.Rows {
				n += len(row.Seats)
			}
		}
	}
	out := make([]Seat, 0, n)
	for _, sec := range ev.Sections {
		for _, blk := range sec.Blocks {
			for _, row := range blk.Rows {
				for _, spec := range row.Seats {
					seat := Seat{
						EventID: ev.ID, ID: SeatID(sec.ID, blk.ID, row.ID, spec.Number),
						Section: sec.ID, Block: blk.ID, Row: row.ID, Number: spec.Number,
						Category: cmp.Or(spec.Category, sec.Category), Price: cmp.Or(spec.Price, sec.Price), Status: Available,
					}
					if spec.NotForSale {
						seat.Status = NotForSale
					}
					out = append(out, seat)
				}
			}
		}
	}
	return out
}

// Header is the event as stored: its sections without their blocks. The
// layout below a section is the seats themselves, stored one by one, so
// the event stays a small item however many seats it has.
func (ev Event) Header() Event {
	out := ev
	out.Sections = make([]Section, len(ev.Sections))
	for i, sec := range ev.Sections {
		sec.Blocks = nil
		out.Sections[i] = sec
	}
	return out
}
