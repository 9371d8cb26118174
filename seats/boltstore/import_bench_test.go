package boltstore

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fairgate/fairgate/seats"
)

// grid is an event of sections of 50 rows of 50 seats, one block each: its
// sections (S1, S10, S11, …, S2) and rows (1, 10, …, 2) are listed in an
// order other than their keys', as real layouts are.
func grid(id string, sections int) seats.Event {
	ev := seats.Event{ID: id, Name: id}
	for s := range sections {
		blk := seats.Block{ID: "1"}
		for r := range 50 {
			row := seats.Row{ID: strconv.Itoa(r + 1)}
			for n := 1; n <= 50; n++ {
				row.Seats = append(row.Seats, seats.SeatSpec{Number: n})
			}
			blk.Rows = append(blk.Rows, row)
		}
		ev.Sections = append(ev.Sections, seats.Section{ID: "S" + strconv.Itoa(s+1), Name: "S", Blocks: []seats.Block{blk}})
	}
	return ev
}

// BenchmarkImport imports events of 100,000 and 300,000 seats into a
// store that also serves holds on another event, one after the other from
// holders goroutines, and reports the holds' p99 during the import.
//
//	go test -run '^$' -bench Import -benchtime 1x ./seats/boltstore
func BenchmarkImport(b *testing.B) {
	for _, sections := range []int{40, 120} {
		b.Run(fmt.Sprintf("seats=%d", sections*2500), func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), "seats.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			svc := seats.NewService(s, time.Now)
			ctx := context.Background()
			if _, err := svc.CreateEvent(ctx, grid("other", 1)); err != nil {
				b.Fatal(err)
			}
			var all []time.Duration
			for i := range b.N {
				stop := make(chan struct{})
				lat := holdLoad(b, svc, 4, stop)
				start := time.Now()
				if _, err := svc.CreateEvent(ctx, grid(fmt.Sprint("big", i), sections)); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/import")
				close(stop)
				all = append(all, lat()...)
			}
			slices.Sort(all)
			if len(all) > 0 {
				b.ReportMetric(float64(all[len(all)*99/100])/1e6, "hold-p99-ms")
				b.ReportMetric(float64(len(all)), "holds")
			}
		})
	}
}

// holdLoad runs n holders on the event "other" until stop: each opens a
// session and holds and releases one seat of its own row over and over.
// The returned function waits for them and returns every hold's latency.
func holdLoad(b testing.TB, svc *seats.Service, n int, stop chan struct{}) func() []time.Duration {
	var wg sync.WaitGroup
	lats := make([][]time.Duration, n)
	ctx := context.Background()
	for h := range n {
		user := fmt.Sprint("holder", h, time.Now().UnixNano())
		sess, err := svc.OpenSession(ctx, "other", user, "", time.Now(), nil)
		if err != nil {
			b.Fatal(err)
		}
		seat := seats.SeatID("S1", "1", strconv.Itoa(h+1), 1)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				if _, err := svc.HoldSeats(ctx, sess.ID, user, []string{seat}, time.Now(), nil); err != nil {
					b.Error(err)
					return
				}
				lats[h] = append(lats[h], time.Since(start))
				if _, err := svc.ReleaseSeat(ctx, sess.ID, user, seat, time.Now(), nil); err != nil {
					b.Error(err)
					return
				}
				time.Sleep(time.Millisecond) // a paced client, not a flood
			}
		})
	}
	return func() []time.Duration {
		wg.Wait()
		return slices.Concat(lats...)
	}
}
