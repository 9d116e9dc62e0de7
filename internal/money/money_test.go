package money

import (
	"encoding/json"
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
	for _, bad := range []string{"", ".", "1e3", "0.0000001", "NaN", "1,5", "$1", "0x10", "99999999999999999999"} {
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
