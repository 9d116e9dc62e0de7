package redact

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	r := New("hunter2-long-secret", "xq7") // declared: hidden whatever its length
	cases := map[string]string{
		"login with hunter2-long-secret now":                                   "login with [REDACTED] now",
		"short xq7 too":                                                        "short [REDACTED] too",
		"token ghp_abcdefghijklmnopqrstuvwxyz0123 leaked":                      "token [REDACTED] leaked",
		"pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopq":                 "pat [REDACTED]",
		"Authorization: Bearer abcdefghijklmnop.qrs":                           "Authorization: [REDACTED]",
		"curl -H 'Authorization: basic eC1hY2Nlc3MtdG9rZW46c2VjcmV0'":          "curl -H 'Authorization: [REDACTED]'",
		"password=sup3rs3cret&user=bob":                                        "password=[REDACTED]&user=bob",
		`{"api_key": "k-1234567890"}`:                                          `{"api_key": "[REDACTED]"}`,
		"aws AKIAIOSFODNN7EXAMPLE key":                                         "aws [REDACTED] key",
		"jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghij":      "jwt [REDACTED]",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----": "[REDACTED]",
		"plain output, nothing secret":                                         "plain output, nothing secret",
	}
	for in, want := range cases {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	var nilR *Redactor
	if got := nilR.String("ghp_abcdefghijklmnopqrstuvwxyz0123"); got != mask {
		t.Errorf("nil redactor: %q", got)
	}
}

func TestFromEnv(t *testing.T) {
	r := FromEnv([]string{"GITHUB_TOKEN=ghs_shortish_value_1", "HOME=/root/home-dir", "MAIL_HMAC_SECRET=s3cr3t-value", "PATH=/usr/bin:/bin", "TOKEN_COUNT=3"})
	got := r.String("a ghs_shortish_value_1 b s3cr3t-value c /root/home-dir 3")
	// A name that only looks secret with a short value is a guess too far.
	if strings.Contains(got, "shortish") || strings.Contains(got, "s3cr3t") || !strings.Contains(got, "/root/home-dir 3") {
		t.Fatalf("FromEnv redaction: %q", got)
	}
}

func TestPayload(t *testing.T) {
	r := New("leaky-value-123")
	in := map[string]any{
		"to": "team@example.com", "api_token": "xyz", "nested": map[string]any{"Password": "p", "note": "has leaky-value-123"},
		"list": []any{"ok", map[string]any{"Authorization": "Bearer x"}},
	}
	out := r.Payload(in)
	b, _ := json.Marshal(out)
	s := string(b)
	for _, bad := range []string{"xyz", `"p"`, "leaky-value-123", "Bearer x"} {
		if strings.Contains(s, bad) {
			t.Errorf("payload leaks %s: %s", bad, s)
		}
	}
	if !strings.Contains(s, "team@example.com") {
		t.Errorf("payload lost plain data: %s", s)
	}
	if in["api_token"] != "xyz" {
		t.Error("Payload changed its input")
	}
}

// FuzzString: a registered secret never survives, wherever it sits.
func FuzzString(f *testing.F) {
	f.Add("prefix", "s3cret-value", "suffix")
	f.Add("", "aaaaaa", "aaaa")
	f.Add("x\n", "tok_with\nnewline", "\x00")
	f.Fuzz(func(t *testing.T, pre, secret, post string) {
		if secret == "" || strings.ContainsAny(secret, "[]") { // a secret with brackets could re-form across the mask
			return
		}
		out := New(secret).String(pre + secret + post)
		if strings.Contains(out, secret) {
			t.Fatalf("secret %q survives in %q", secret, out)
		}
	})
}
