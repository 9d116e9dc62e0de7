package model

import (
	"strings"
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"30s": 30 * time.Second, "2d": 48 * time.Hour, "1h30m": 90 * time.Minute, "0d": 0} {
		if d, err := ParseDuration(in); err != nil || time.Duration(d) != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, time.Duration(d), err, want)
		}
	}
	for in, want := range map[string]string{
		"999999999999d":         "too long: at most 106751d",
		"99999999999999999999d": "too long",
		"106752d":               "too long",
		"-1d":                   "invalid duration",
		"9999999999999999999h":  "invalid duration",
		"30":                    "has no unit",
		"-5m":                   "negative",
	} {
		if _, err := ParseDuration(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDuration(%q): %v, want an error saying %q", in, err, want)
		}
	}
}
