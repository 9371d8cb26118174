package nodes

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseWeights(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []float64
		wantErr bool
	}{
		{"0.6,0.3,0.1", []float64{0.6, 0.3, 0.1}, false},
		{"60, 30, 10", []float64{0.6, 0.3, 0.1}, false},
		{"1", []float64{1}, false},
		{"1,1", []float64{0.5, 0.5}, false},
		{"0,0", nil, true},
		{"60,-30,10", nil, true},
		{"60,,10", nil, true},
		{"sixty", nil, true},
	} {
		got, err := ParseWeights(tc.in)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParseWeights(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !slices.EqualFunc(got, tc.want, func(a, b float64) bool { return a-b < 1e-12 && b-a < 1e-12 }) {
			t.Errorf("ParseWeights(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestPick(t *testing.T) {
	w := []float64{0.6, 0.3, 0.1}
	for _, tc := range []struct {
		x    float64
		want int
	}{{0, 0}, {0.59, 0}, {0.6, 1}, {0.89, 1}, {0.9, 2}, {0.999, 2}} {
		if got := Pick(w, tc.x); got != tc.want {
			t.Errorf("Pick(%v, %v) = %d, want %d", w, tc.x, got, tc.want)
		}
	}
}

func TestDynamoArgs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		d         Dynamo
		has, lack string
	}{
		{"in memory", Dynamo{JarDir: "/jar", Port: 8000}, "-inMemory", "-dbPath"},
		{"on disk", Dynamo{JarDir: "/jar", DataDir: "/data", Port: 8000}, "-dbPath /data", "-inMemory"},
	} {
		got := strings.Join(tc.d.args(), " ")
		if !strings.Contains(got, tc.has) || strings.Contains(got, tc.lack) ||
			!strings.Contains(got, "-jar /jar/DynamoDBLocal.jar") || !strings.Contains(got, "-port 8000") {
			t.Errorf("%s: args %q, want %q and not %q", tc.name, got, tc.has, tc.lack)
		}
	}
}

// TestDynamoResolvesRelativeDirs: DynamoDB Local runs in its data
// directory, so the jar and data directories it is given are absolute,
// whatever the caller gave.
func TestDynamoResolvesRelativeDirs(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	d := Dynamo{JarDir: ".ci/dynamodb", DataDir: "run/dynamodb", Port: 8000}
	if err := d.resolve(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(d.args(), " ")
	for _, want := range []string{
		"-jar " + filepath.Join(wd, ".ci/dynamodb", "DynamoDBLocal.jar"),
		"-dbPath " + filepath.Join(wd, "run/dynamodb"),
	} {
		if !strings.Contains(got, want) {
			t.Errorf("args %q, want %q", got, want)
		}
	}
}
