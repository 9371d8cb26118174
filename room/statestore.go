package room

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/fairgate/fairgate/admission/roomstate"
)

// StateStore is where a room keeps what every node serving it must share
// and what must outlive a restart: its control state and serving clock, the
// admission budget, the used-place ledger and the population estimate
// (docs/SCALING.md, "Room state"). Nodes (Caddy instances or `fairgate
// proxy` processes) whose rooms point at one store are one room.
type StateStore struct {
	// Type is `memory` (this process only, lost on restart: the behaviour
	// before the store), `bolt` (a file, durable on one machine) or
	// `dynamodb` (one table shared by a cluster). Default: `bolt`
	// (defaultStoreType).
	Type string `json:"type,omitempty"`
	// Path is the bolt file. Default: under Caddy,
	// `<Caddy's data directory>/fairgate/rooms.db`; for `fairgate proxy`,
	// its `--state` flag (`fairgate-rooms.db` in the working directory).
	// One process at a time may open a file: another waits call_timeout
	// and fails with an error naming it.
	Path string `json:"path,omitempty"`
	// Table is the DynamoDB table (`fairgate proxy init-tables` creates
	// it). Default: `fairgate_rooms` (defaultTable).
	Table string `json:"table,omitempty"`
	// Region is the AWS region. Default: the AWS SDK's standard
	// configuration (AWS_REGION, shared config), else us-east-1.
	Region string `json:"region,omitempty"`
	// Endpoint overrides DynamoDB's endpoint, e.g. DynamoDB Local's
	// `http://127.0.0.1:8000`. Default: the SDK's.
	Endpoint string `json:"endpoint,omitempty"`
	// Node is this node's id in the store's per-node items (population
	// and demand). Default: `<hostname>-<pid>`.
	Node string `json:"node,omitempty"`
	// BudgetBlock is how many admissions a node reserves from the shared
	// budget per store write: larger blocks cost fewer writes and may leave
	// up to nodes×(block-1) admissions of a window unspent. Default: 1
	// (defaultBudgetBlock).
	BudgetBlock int64 `json:"budget_block,omitempty"`
	// Poll is how often a node re-reads the room's control state, so a
	// change made through any node reaches every node within about Poll.
	// On several nodes the ticking node's speeds and capacity rates take
	// effect two of its polls after it sets them, so every node of a room
	// uses one value. Default: 500ms (defaultPoll).
	Poll Duration `json:"poll,omitempty"`
	// CallTimeout bounds every store call. Default: 2s
	// (roomstate.DefaultCallTimeout).
	CallTimeout Duration `json:"call_timeout,omitempty"`
	// OnUnavailable is what a node does with an eligible visitor while the
	// store fails: `refuse` (default) answers 503 with Retry-After, while
	// the waiting page, new tokens and valid passes keep working; `local`
	// admits at this node's last share of the rate and remembers used
	// places in memory only, so a place may be admitted once per node until
	// the store returns (docs/SCALING.md, "Store down").
	OnUnavailable string `json:"on_unavailable,omitempty"`
}

// Store types and defaults (each named once).
const (
	StoreMemory = "memory"
	StoreBolt   = "bolt"
	StoreDynamo = "dynamodb"
	// defaultStoreType is durable on one machine: a restart keeps the queue.
	defaultStoreType = StoreBolt
	// DefaultStateFile is `fairgate proxy`'s bolt file without --state.
	DefaultStateFile = "fairgate-rooms.db"
	// defaultBudgetBlock reserves one admission per store write: exact.
	defaultBudgetBlock = 1
	// defaultTable is dynamostore.DefaultTable, the table `fairgate proxy
	// init-tables` creates; named here so that settling a config does not
	// bring in the DynamoDB client (a test holds the two equal).
	defaultTable = "fairgate_rooms"
	// defaultPoll re-reads the control state twice a second.
	defaultPoll = 500 * time.Millisecond
	// OnUnavailableRefuse and OnUnavailableLocal are the answers to a store failure.
	OnUnavailableRefuse = "refuse"
	OnUnavailableLocal  = "local"
)

// validationStatePath stands in for a front door's default bolt file when
// a config is only checked.
const validationStatePath = "(the front door's default)"

// storeSettings is a StateStore with defaults applied.
type storeSettings struct {
	StateStore
}

// settleStore checks s and fills in its defaults; defaultPath is the front
// door's bolt file (empty: a bolt store needs Path). A nil s is the front
// door's default: bolt at defaultPath, or memory when there is none (a Go
// program building a gateway itself).
func settleStore(s *StateStore, defaultPath string) (storeSettings, error) {
	var out storeSettings
	if s == nil {
		if defaultPath == "" {
			out.Type = StoreMemory
			return out, nil
		}
		s = &StateStore{}
	}
	out.StateStore = *s
	if out.Type == "" {
		out.Type = defaultStoreType
	}
	switch out.Type {
	case StoreMemory:
	case StoreBolt:
		if out.Path == "" {
			out.Path = defaultPath
		}
		if out.Path == "" {
			return out, OptionErr("state_store", "bolt needs a path")
		}
		if out.Path != validationStatePath {
			out.Path = canonicalFile(out.Path)
		}
	case StoreDynamo:
		if out.Table == "" {
			out.Table = defaultTable
		}
		if err := checkDynamo(out.StateStore); err != nil {
			return out, err
		}
	default:
		return out, OptionErr("state_store", "type %q: want memory, bolt or dynamodb", out.Type)
	}
	if out.Type != StoreBolt && out.Path != "" {
		return out, OptionErr("state_store", "path is for bolt, not %s", out.Type)
	}
	if out.Type != StoreDynamo && (out.Table != "" || out.Region != "" || out.Endpoint != "") {
		return out, OptionErr("state_store", "table, region and endpoint are for dynamodb, not %s", out.Type)
	}
	if out.BudgetBlock < 0 {
		return out, OptionErr("state_store", "budget_block %d: must be at least 1", out.BudgetBlock)
	}
	if out.BudgetBlock == 0 {
		out.BudgetBlock = defaultBudgetBlock
	}
	if out.Poll < 0 || out.CallTimeout < 0 {
		return out, OptionErr("state_store", "poll and call_timeout must be positive")
	}
	SetDuration(&out.Poll, defaultPoll)
	SetDuration(&out.CallTimeout, roomstate.DefaultCallTimeout)
	switch out.OnUnavailable {
	case "":
		out.OnUnavailable = OnUnavailableRefuse
	case OnUnavailableRefuse, OnUnavailableLocal:
	default:
		return out, OptionErr("state_store", "on_unavailable %q: want refuse or local", out.OnUnavailable)
	}
	if out.Node == "" {
		host, _ := os.Hostname()
		out.Node = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return out, nil
}

// canonicalFile is path absolute, through any symbolic link to its
// directory: two rooms naming one file differently (`rooms.db` and
// `/srv/rooms.db`) share one opened store, rather than the second waiting
// for ever on the lock the first holds.
func canonicalFile(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return path
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// CheckPath finds, without opening the file, what would keep a settled
// bolt store from ever opening: a file where a directory must be, a
// directory where the file must be, no permission to create or write it.
// Waiting fixes none of these, so they fail the config. A lock another
// process holds is not looked at: it may be released, and a running
// process holding the file must not fail the validation of its next config.
func (s StateStore) CheckPath() error {
	if s.Type != StoreBolt {
		return nil
	}
	fi, err := os.Stat(s.Path)
	if err == nil {
		if fi.IsDir() {
			return OptionErr("state_store", "path %s is a directory: name the bolt file, e.g. %s", s.Path, filepath.Join(s.Path, "rooms.db"))
		}
		f, err := os.OpenFile(s.Path, os.O_RDWR, 0)
		if err != nil {
			return OptionErr("state_store", "path %s: %w", s.Path, err)
		}
		return f.Close()
	}
	// Missing: the nearest existing ancestor must be a directory the file's
	// directories can be made in.
	for dir := filepath.Dir(s.Path); ; dir = filepath.Dir(dir) {
		fi, err := os.Stat(dir)
		switch {
		case err == nil && !fi.IsDir():
			return OptionErr("state_store", "path %s: %s is a file, where a directory must be", s.Path, dir)
		case err == nil:
			return checkWritable(s.Path, dir)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return OptionErr("state_store", "path %s: %w", s.Path, err)
		case filepath.Dir(dir) == dir:
			return nil
		}
	}
}

// checkWritable tries to create a file in dir.
func checkWritable(path, dir string) error {
	f, err := os.CreateTemp(dir, ".fairgate-check-*")
	if err != nil {
		return OptionErr("state_store", "path %s: cannot create it in %s: %w", path, dir, errors.Unwrap(err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// DynamoDB's rules for a table name, and the shape of a region (a DNS
// label): checked at start, since a node that cannot reach its store still
// starts (docs/SCALING.md, "Starting while the store is down"), and only a
// store that answers would otherwise refuse a malformed name.
var (
	dynamoTable  = regexp.MustCompile(`^[A-Za-z0-9_.-]{3,255}$`)
	dynamoRegion = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
)

// checkDynamo refuses a DynamoDB table, region or endpoint that no store
// could answer: a config error fails start-up, an unreachable store does not.
func checkDynamo(s StateStore) error {
	if !dynamoTable.MatchString(s.Table) {
		return OptionErr("state_store", "table %q: DynamoDB table names are 3 to 255 letters, digits, '_', '-' or '.'", s.Table)
	}
	if s.Region != "" && !dynamoRegion.MatchString(s.Region) {
		return OptionErr("state_store", "region %q: want an AWS region such as us-east-1", s.Region)
	}
	if s.Endpoint != "" {
		u, err := url.Parse(s.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return OptionErr("state_store", "endpoint %q: want an absolute http:// or https:// URL such as http://127.0.0.1:8000", s.Endpoint)
		}
	}
	return nil
}

// RoomKey is what a room of one process is kept under across reloads
// (Caddy's usage pool key, with the room's name): its store and every
// setting a room is built with, so a reload changing on_unavailable,
// budget_block, poll, call_timeout or node builds the room anew on the same
// store (it joins the stored state, as a restarted node does).
func (s StateStore) RoomKey() string {
	return fmt.Sprintf("%s|%s|%d|%v|%v|%s", s.StoreKey(), s.OnUnavailable, s.BudgetBlock,
		time.Duration(s.Poll), time.Duration(s.CallTimeout), s.Node)
}

// identity is what one opened store is shared under in a process: rooms of
// one process pointing at the same store share one handle.
func (s storeSettings) identity() string {
	switch s.Type {
	case StoreBolt:
		return "bolt:" + s.Path
	case StoreDynamo:
		return "dynamodb:" + s.Region + "|" + s.Endpoint + "|" + s.Table
	}
	return StoreMemory
}

// StoreKey is what rooms of one process pointing at the same store share
// an opened store under (Caddy's usage pool key).
func (s StateStore) StoreKey() string { return storeSettings{s}.identity() }
