// Package redact keeps secrets out of the ledger, pull request bodies and
// logs: known secret values (tokens handed to tools, GITHUB_TOKEN, the
// approval secret) and well-known token shapes become [REDACTED].
package redact

import (
	"regexp"
	"slices"
	"strings"
)

// mask replaces a secret.
const mask = "[REDACTED]"

// minGuessed is the shortest value of a variable guessed to be secret by
// its name that is treated as one: shorter ones would mangle ordinary
// output ("1", "true"). A declared secret (With) is hidden at any length;
// validate warns about short ones.
const minGuessed = 6

// Redactor hides secret values and token shapes. The zero value and a nil
// *Redactor hide token shapes only.
type Redactor struct {
	secrets []string // longest first, so a secret containing another goes whole
}

var shapes = []*regexp.Regexp{
	regexp.MustCompile(`\b(ghp|gho|ghs|ghu|ghr)_[A-Za-z0-9]{20,}`),
	regexp.MustCompile(`\bgithub_pat_[A-Za-z0-9_]{20,}`),
	regexp.MustCompile(`(?i)\b(bearer|token|basic)\s+[A-Za-z0-9._~+/=-]{12,}`),
	regexp.MustCompile(`(?i)(authorization|x-api-key|api[_-]?key|password|passwd|secret)(["']?\s*[:=]\s*["']?)[^\s"',;&]{4,}`),
	regexp.MustCompile(`\b(AKIA|ASIA)[A-Z0-9]{16}\b`),
	regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`),
	regexp.MustCompile(`(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)`),
	regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`),
}

// New returns a redactor for the given secret values.
func New(secrets ...string) *Redactor { return (&Redactor{}).With(secrets...) }

// secretName reports whether an environment variable name looks secret.
func secretName(name string) bool {
	n := strings.ToUpper(name)
	for _, w := range []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "PRIVATE_KEY", "CREDENTIAL", "ACCESS_KEY"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// FromEnv collects the values of environment variables ("NAME=value")
// whose names look secret.
func FromEnv(environ []string) *Redactor {
	var vals []string
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if ok && secretName(name) && len(val) >= minGuessed {
			vals = append(vals, val)
		}
	}
	return New(vals...)
}

// With returns a redactor that also hides secrets, whatever their length.
func (r *Redactor) With(secrets ...string) *Redactor {
	out := &Redactor{}
	if r != nil {
		out.secrets = slices.Clone(r.secrets)
	}
	for _, s := range secrets {
		if s != "" && !slices.Contains(out.secrets, s) {
			out.secrets = append(out.secrets, s)
		}
	}
	slices.SortFunc(out.secrets, func(a, b string) int { return len(b) - len(a) })
	return out
}

// String hides secrets and token shapes in s.
func (r *Redactor) String(s string) string {
	if r != nil {
		for _, sec := range r.secrets {
			if strings.Contains(s, sec) {
				s = strings.ReplaceAll(s, sec, mask)
			}
		}
	}
	for i, re := range shapes {
		if !re.MatchString(s) {
			continue
		}
		if i == 3 { // keep the key name, hide the value
			s = re.ReplaceAllString(s, "${1}${2}"+mask)
			continue
		}
		s = re.ReplaceAllString(s, mask)
	}
	return s
}

// secretKey reports whether a payload key names a secret.
func secretKey(k string) bool {
	k = strings.ToLower(strings.ReplaceAll(k, "-", "_"))
	for _, w := range []string{"token", "secret", "password", "passwd", "api_key", "apikey", "authorization", "private_key", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Payload returns a deep copy of v in which values under secret-looking
// keys are masked and all other strings pass through String.
func (r *Redactor) Payload(v map[string]any) map[string]any {
	if v == nil {
		return map[string]any{}
	}
	return r.value(v).(map[string]any)
}

func (r *Redactor) value(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			if secretKey(k) {
				out[k] = mask
				continue
			}
			out[k] = r.value(x)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = r.value(x)
		}
		return out
	case string:
		return r.String(t)
	}
	return v
}
