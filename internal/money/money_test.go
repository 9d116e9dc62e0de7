package money

import (
	"encoding/json"
	"math"
	"testing"

	"gopkg.in/yaml.v3"
)

func TestParseAndString(t *testing.T) {
	for _, c := range []struct {
		in   string
		want USD
		out  string
	}{
		{"0.02", 20_000, "0.02"}, {"5", 5 * Dollar, "5"}, {"1.250000", 1_250_000, "1.25"}, {".5", 500_000, "0.5"},
		{"-0.5", -500_000, "-0.5"}, {"0.000001", 1, "0.000001"}, {"1000000000", 1_000_000_000 * Dollar, "1000000000"},
	} {
		got, err := Parse(c.in)
		if err != nil || got != c.want || got.String() != c.out {
			t.Errorf("Parse(%q) = %d (%s), %v; want %d (%s)", c.in, got, got, err, c.want, c.out)
		}
	}
	for _, bad := range []string{"", ".", "1e3", "0.0000001", "NaN", "1,5", "$1", "0x10", "99999999999999999999", "1000000000.000001"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// Ten steps of a cent make exactly ten cents: the float sum does not.
func TestExactSums(t *testing.T) {
	var f float64
	var m USD
	step, _ := Parse("0.01")
	for range 10 {
		f += 0.01
		m += step
	}
	if f >= 0.1 {
		t.Skip("this float arithmetic happens to be exact")
	}
	if limit, _ := Parse("0.10"); m < limit {
		t.Fatalf("%s < %s", m, limit)
	}
}

func TestEncodings(t *testing.T) {
	var v struct {
		A USD `json:"a" yaml:"a"`
	}
	if err := json.Unmarshal([]byte(`{"a": 0.3}`), &v); err != nil || v.A != 300_000 {
		t.Fatalf("json: %d %v", v.A, err)
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"a":0.3}` {
		t.Fatalf("json out: %s", b)
	}
	if err := yaml.Unmarshal([]byte("a: 1.10\n"), &v); err != nil || v.A != 1_100_000 {
		t.Fatalf("yaml: %d %v", v.A, err)
	}
	if err := yaml.Unmarshal([]byte("a: -1\n"), &v); err == nil {
		t.Fatal("a negative amount in YAML was accepted")
	}
	if got := USD(1_500_000).Dollars(); got != "$1.50" {
		t.Errorf("Dollars = %s", got)
	}
	if got := USD(125).Dollars(); got != "$0.000125" {
		t.Errorf("Dollars = %s", got)
	}
	if u, err := FromFloat(0.1 + 0.2); err != nil || u != 300_000 {
		t.Errorf("FromFloat = %d %v", u, err)
	}
}

// Sums saturate at ±Max instead of wrapping: 18,446 reports of a billion
// dollars once summed to a negative amount.
func TestAddSaturates(t *testing.T) {
	var sum USD
	for range 18_446 {
		sum = sum.Add(Max)
	}
	if sum != Max {
		t.Fatalf("sum = %d, want Max", sum)
	}
	for _, c := range []struct{ a, b, want USD }{
		{1, 2, 3}, {Max, 1, Max}, {-Max, -1, -Max}, {Max, -Max, 0},
		{USD(math.MaxInt64), USD(math.MaxInt64), Max}, {USD(math.MinInt64), USD(math.MinInt64), -Max}, {USD(math.MinInt64), 5, -Max + 5},
	} {
		if got := c.a.Add(c.b); got != c.want {
			t.Errorf("%d.Add(%d) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

// Whatever amount Append writes, Parse reads: beyond ±Max it writes ±Max.
func TestAppendReadsBack(t *testing.T) {
	for _, u := range []USD{0, 1, -1, Max, -Max, Max + 1, -Max - 1, USD(math.MaxInt64), USD(math.MinInt64), 123_456_789} {
		got, err := Parse(u.String())
		if err != nil || got != u.Clamp() {
			t.Errorf("%d written as %q reads back as %d, %v; want %d", int64(u), u.String(), got, err, u.Clamp())
		}
		b, _ := json.Marshal(u)
		var back USD
		if err := json.Unmarshal(b, &back); err != nil || back != u.Clamp() {
			t.Errorf("%d: JSON %s reads back as %d, %v", int64(u), b, back, err)
		}
	}
}

func TestPerThousand(t *testing.T) {
	for _, c := range []struct {
		price USD
		n     int64
		want  USD
	}{
		{2_500, 1_000, 2_500}, // $0.0025 per 1k, 1k tokens
		{2_500, 1, 3},         // 2.5 micro-dollars, rounded up
		{15_000, 1_200, 18_000},
		{0, 1_000, 0}, {1, -5, 0},
		{Max, math.MaxInt64, Max}, {1_000, math.MaxInt64, Max}, {1, math.MaxInt64, Max},
	} {
		if got := c.price.PerThousand(c.n); got != c.want {
			t.Errorf("%d.PerThousand(%d) = %d, want %d", c.price, c.n, got, c.want)
		}
	}
}
