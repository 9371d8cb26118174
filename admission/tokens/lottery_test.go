package tokens

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

// TestLotteryVectors checks LotteryNumber bit for bit against vectors made by
// Python's hmac module (testdata/lottery_vectors.py).
func TestLotteryVectors(t *testing.T) {
	raw, err := os.ReadFile("testdata/lottery_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var vectors []struct{ Key, Lot, V string }
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) < 10 {
		t.Fatalf("only %d vectors", len(vectors))
	}
	for _, vec := range vectors {
		key, err := base64.StdEncoding.DecodeString(vec.Key)
		if err != nil {
			t.Fatal(err)
		}
		want, err := strconv.ParseFloat(vec.V, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := LotteryNumber(key, vec.Lot); got != want {
			t.Errorf("LotteryNumber(%s…, %q) = %.17g, want %.17g", vec.Key[:8], vec.Lot, got, want)
		}
	}
}

// TestLotteryUniform: over many tickets the numbers look uniform (a
// chi-squared test over 20 bins, far from its 0.1% critical value).
func TestLotteryUniform(t *testing.T) {
	const n, bins = 20000, 20
	rnd := newSeeded(1)
	key := secretOf("lottery")
	var counts [bins]int
	buf := make([]byte, 16)
	for range n {
		rnd.Read(buf)
		counts[int(LotteryNumber(key, base64.StdEncoding.EncodeToString(buf))*bins)]++
	}
	chi2 := 0.0
	for _, c := range counts {
		d := float64(c) - n/bins
		chi2 += d * d / (n / bins)
	}
	if chi2 > 43.8 { // 19 degrees of freedom, p = 0.001
		t.Fatalf("chi-squared %.1f: lottery numbers are not uniform: %v", chi2, counts)
	}
}
