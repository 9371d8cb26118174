package room

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
	"github.com/fairgate/fairgate/admission/roomstate/dynamostore"
)

// TestCapacitySettles: capacity sizes the room with rate as its ceiling
// (the default rate when none is set) and a default active window;
// sessions, the other way of sizing by what the site holds, is refused
// beside it.
func TestCapacitySettles(t *testing.T) {
	s, err := Config{Capacity: 500}.Settle()
	if err != nil {
		t.Fatal(err)
	}
	if s.Rate != defaultRate || s.activeWindow != defaultActiveWindow {
		t.Errorf("rate %v, active_window %v; want %v and %v", s.Rate, s.activeWindow, float64(defaultRate), defaultActiveWindow)
	}
	// A settled config settles again (a reload passes it on), with or
	// without capacity.
	plain, err := Config{}.Settle()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Config{s.Config, plain.Config} {
		if _, err := c.Settle(); err != nil {
			t.Errorf("settling a settled config (capacity %d): %v", c.Capacity, err)
		}
	}
	_, err = Config{Capacity: 500, Sessions: 400}.Settle()
	if err == nil || !strings.Contains(err.Error(), "capacity and sessions both size the room") {
		t.Errorf("capacity with sessions: %v, want the conflict refused", err)
	}
}

func TestCheckExplicitZeros(t *testing.T) {
	for _, tc := range []struct {
		json, want string
	}{
		{`{"rate":0}`, "rate 0: must be a positive number of admissions per second; leave rate out for the default"},
		{`{"rate":-2}`, "rate -2"},
		{`{"rate":2}`, ""},
		{`{"capacity":0}`, "capacity 0: must be a positive number of active visitors"},
		{`{"capacity":-1}`, "capacity -1"},
		{`{"capacity":500,"rate":2}`, ""},
		{`{"room":"x"}`, ""},
	} {
		err := CheckExplicitZeros([]byte(tc.json))
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.json, err, tc.want)
		}
	}
}

// TestBoltPathChecks: what keeps a bolt file from ever opening fails the
// config, without opening the file; one file named two ways is one store.
func TestBoltPathChecks(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(file, "rooms.db"), file + " is a file, where a directory must be"},
		{filepath.Join(file, "a", "rooms.db"), file + " is a file, where a directory must be"},
		{dir, dir + " is a directory"},
		{filepath.Join(dir, "new", "rooms.db"), ""},
		{file, ""},
	} {
		st, err := settleStore(&StateStore{Type: StoreBolt, Path: tc.path}, "")
		if err != nil {
			t.Fatal(err)
		}
		err = st.CheckPath()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v, want %q", tc.path, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("checking made the directory: %v", err)
	}
	t.Chdir(dir)
	rel, _ := settleStore(&StateStore{Type: StoreBolt, Path: "rooms.db"}, "")
	abs, _ := settleStore(&StateStore{Type: StoreBolt, Path: filepath.Join(dir, "rooms.db")}, "")
	if rel.StateStore.StoreKey() != abs.StateStore.StoreKey() {
		t.Errorf("one file, two stores: %s and %s", rel.StateStore.StoreKey(), abs.StateStore.StoreKey())
	}
}

func TestSettleStateStore(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       *StateStore
		def      string
		wantType string
		wantErr  string
	}{
		{"library default is memory", nil, "", StoreMemory, ""},
		{"front door default is bolt there", nil, "/data/rooms.db", StoreBolt, ""},
		{"bolt without any path", &StateStore{Type: "bolt"}, "", "", "bolt needs a path"},
		{"unknown type", &StateStore{Type: "redis"}, "x", "", `type "redis"`},
		{"dynamodb path", &StateStore{Type: "dynamodb", Path: "x"}, "", "", "path is for bolt"},
		{"bad answer", &StateStore{Type: "memory", OnUnavailable: "maybe"}, "", "", "on_unavailable"},
		{"negative block", &StateStore{Type: "memory", BudgetBlock: -1}, "", "", "budget_block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := Config{StateStore: tc.in}.SettleStateStore(tc.def)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || st.Type != tc.wantType {
				t.Fatalf("got %+v %v, want type %s", st, err, tc.wantType)
			}
			if st.Type == StoreBolt && st.Path != tc.def {
				t.Fatalf("path %q, want %q", st.Path, tc.def)
			}
		})
	}
	st, _ := Config{StateStore: &StateStore{Type: "dynamodb"}}.SettleStateStore("")
	if st.Table != dynamostore.DefaultTable || st.BudgetBlock != defaultBudgetBlock || time.Duration(st.Poll) != defaultPoll ||
		st.OnUnavailable != OnUnavailableRefuse || st.Node == "" || time.Duration(st.CallTimeout) != roomstate.DefaultCallTimeout {
		t.Fatalf("defaults: %+v", st)
	}
}

// TestFIFOSettles: a fifo room gets the default luck window.
func TestFIFOSettles(t *testing.T) {
	s, err := Config{QueueOrder: "fifo"}.Settle()
	if err != nil || s.roomConfig().Luck != DefaultLuckWindow || s.roomConfig().Order != "fifo" {
		t.Fatalf("fifo settles to %+v, %v; want luck %v", s.roomConfig(), err, DefaultLuckWindow)
	}
}

// TestDefaultTableIsTheStores: the table a config settles to is the one
// `fairgate proxy init-tables` creates.
func TestDefaultTableIsTheStores(t *testing.T) {
	if defaultTable != dynamostore.DefaultTable {
		t.Fatalf("DefaultTable %q, dynamostore's %q", defaultTable, dynamostore.DefaultTable)
	}
}
