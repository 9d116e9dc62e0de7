package gitops

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/config"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/astra-gitops/astra/internal/errkind"
)

// tokenUser is the user name GitHub expects with an installation or
// GITHUB_TOKEN in basic auth.
const tokenUser = "x-access-token"

// setupAuth picks credentials for an http(s) remote: Options.Token, else the
// Authorization extraheader actions/checkout stores in git config, else none
// (credentials in the URL, if any, are used by go-git itself).
func (r *Repo) setupAuth() error {
	if !r.isHTTP() {
		return nil // local path, file://, ssh: no http credentials
	}
	u, _ := url.Parse(r.remoteURL)
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			r.addSecret(pw)
		}
	}
	if r.opts.Token != "" {
		r.auth = &githttp.BasicAuth{Username: tokenUser, Password: r.opts.Token}
		r.addSecret(r.opts.Token)
		return nil
	}
	header, err := r.extraHeader(u)
	if err != nil {
		return err
	}
	if header == "" {
		return nil
	}
	name, value, _ := strings.Cut(header, ":")
	if !strings.EqualFold(strings.TrimSpace(name), "authorization") {
		return nil
	}
	value = strings.TrimSpace(value)
	r.addSecret(value)
	scheme, cred, _ := strings.Cut(value, " ")
	cred = strings.TrimSpace(cred)
	r.addSecret(cred)
	switch strings.ToLower(scheme) {
	case "basic":
		raw, err := base64.StdEncoding.DecodeString(cred)
		if err != nil {
			return fmt.Errorf("the Authorization extraheader in git config for %s is not valid base64 basic auth: set GITHUB_TOKEN instead", r.remoteDisplay())
		}
		user, pass, _ := strings.Cut(string(raw), ":")
		r.addSecret(pass)
		r.auth = &githttp.BasicAuth{Username: user, Password: pass}
	case "bearer":
		r.auth = &githttp.TokenAuth{Token: cred}
	}
	return nil
}

func (r *Repo) addSecret(s string) {
	if len(s) >= 4 { // never redact trivially short strings out of messages
		r.secrets = append(r.secrets, s, base64.StdEncoding.EncodeToString([]byte(tokenUser+":"+s)))
	}
}

// extraHeader returns the last Authorization http.extraheader that applies
// to u: from the most specific matching http.<url> section, else from the
// plain http section. It reads the repository config and the files it
// includes (include.path, and includeIf "gitdir:..." as actions/checkout v6
// writes it).
func (r *Repo) extraHeader(u *url.URL) (string, error) {
	var sections []*config.Config
	if err := r.readConfig(filepath.Join(r.commonDir, "config"), 0, &sections); err != nil {
		return "", err
	}
	best, bestLen := "", -1
	for _, cfg := range sections {
		for _, s := range cfg.Sections {
			if !s.IsName("http") {
				continue
			}
			if h := lastAuthHeader(s.Options.GetAll("extraheader")); h != "" && bestLen < 0 {
				best, bestLen = h, 0
			}
			for _, sub := range s.Subsections {
				n, ok := urlMatch(sub.Name, u)
				if !ok || n < bestLen {
					continue
				}
				if h := lastAuthHeader(sub.Options.GetAll("extraheader")); h != "" {
					best, bestLen = h, n
				}
			}
		}
	}
	return best, nil
}

func lastAuthHeader(values []string) string {
	h := ""
	for _, v := range values {
		if v == "" {
			h = "" // an empty value resets the list, as in git
			continue
		}
		if name, _, _ := strings.Cut(v, ":"); strings.EqualFold(strings.TrimSpace(name), "authorization") {
			h = v
		}
	}
	return h
}

// urlMatch reports whether the http.<pattern> section applies to u (same
// scheme and host, pattern path a prefix of u's path at a segment boundary)
// and how specific it is.
func urlMatch(pattern string, u *url.URL) (int, bool) {
	p, err := url.Parse(pattern)
	if err != nil || !strings.EqualFold(p.Scheme, u.Scheme) || !strings.EqualFold(p.Host, u.Host) {
		return 0, false
	}
	if p.User != nil && u.User != nil && p.User.Username() != u.User.Username() {
		return 0, false
	}
	pp := strings.TrimSuffix(p.Path, "/")
	up := u.Path
	if pp != "" && up != pp && !strings.HasPrefix(up, pp+"/") {
		return 0, false
	}
	return len(pp) + 1, true
}

// readConfig parses a git config file and, recursively, the files it
// includes; missing included files are skipped, as git does.
func (r *Repo) readConfig(file string, depth int, out *[]*config.Config) error {
	if depth > 10 {
		return fmt.Errorf("%s: include depth exceeded", file)
	}
	f, err := os.Open(file)
	if errors.Is(err, os.ErrNotExist) && depth > 0 {
		return nil
	}
	if err != nil {
		return err
	}
	cfg := config.New()
	err = config.NewDecoder(f).Decode(cfg)
	f.Close()
	if err != nil {
		return fmt.Errorf("parse %s: %w", file, err)
	}
	*out = append(*out, cfg)
	include := func(p string) error {
		if strings.HasPrefix(p, "~/") {
			home, _ := os.UserHomeDir()
			p = filepath.Join(home, p[2:])
		} else if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(file), p)
		}
		return r.readConfig(p, depth+1, out)
	}
	for _, s := range cfg.Sections {
		switch {
		case s.IsName("include"):
			for _, p := range s.Options.GetAll("path") {
				if err := include(p); err != nil {
					return err
				}
			}
		case s.IsName("includeIf"):
			for _, sub := range s.Subsections {
				if !r.gitDirMatches(sub.Name, filepath.Dir(file)) {
					continue
				}
				for _, p := range sub.Options.GetAll("path") {
					if err := include(p); err != nil {
						return err
					}
				}
			}
		}
	}
	return nil
}

// gitDirMatches evaluates an includeIf condition "gitdir:<pattern>" (or
// "gitdir/i:") against this repository's git dir, with git's rules: a
// trailing "/" means everything below, "**" crosses directories, "*" does not.
func (r *Repo) gitDirMatches(cond, configDir string) bool {
	pattern, fold := "", false
	switch {
	case strings.HasPrefix(cond, "gitdir:"):
		pattern = strings.TrimPrefix(cond, "gitdir:")
	case strings.HasPrefix(cond, "gitdir/i:"):
		pattern, fold = strings.TrimPrefix(cond, "gitdir/i:"), true
	default:
		return false
	}
	switch {
	case strings.HasPrefix(pattern, "~/"):
		home, _ := os.UserHomeDir()
		pattern = filepath.ToSlash(home) + pattern[1:]
	case strings.HasPrefix(pattern, "./"):
		pattern = filepath.ToSlash(configDir) + pattern[1:]
	case !strings.HasPrefix(pattern, "/") && !(len(pattern) > 1 && pattern[1] == ':'):
		pattern = "**/" + pattern
	}
	if strings.HasSuffix(pattern, "/") {
		pattern += "**"
	}
	candidates := []string{filepath.ToSlash(r.gitDir)}
	if real, err := filepath.EvalSymlinks(r.gitDir); err == nil {
		candidates = append(candidates, filepath.ToSlash(real))
	}
	for _, c := range candidates {
		if fold {
			if globMatch(strings.ToLower(pattern), strings.ToLower(c)) {
				return true
			}
		} else if globMatch(pattern, c) {
			return true
		}
	}
	return false
}

// globMatch matches slash paths where "*" and "?" stay within a segment and
// "**" spans any number of segments.
func globMatch(pattern, name string) bool {
	if pattern == "" {
		return name == ""
	}
	if strings.HasPrefix(pattern, "**") {
		rest := strings.TrimPrefix(strings.TrimPrefix(pattern, "**"), "/")
		for i := 0; i <= len(name); i++ {
			if (i == 0 || name[i-1] == '/') && globMatch(rest, name[i:]) {
				return true
			}
		}
		return rest == ""
	}
	pseg, prest, pmore := strings.Cut(pattern, "/")
	nseg, nrest, nmore := strings.Cut(name, "/")
	if ok, err := filepath.Match(pseg, nseg); err != nil || !ok {
		return false
	}
	if !pmore {
		return !nmore
	}
	if !nmore {
		return prest == "**"
	}
	return globMatch(prest, nrest)
}

// isHTTP reports whether the remote is reached over http(s), where
// credentials matter.
func (r *Repo) isHTTP() bool {
	u, err := url.Parse(r.remoteURL)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https")
}

// remoteDisplay is the remote's URL without credentials, for messages.
func (r *Repo) remoteDisplay() string {
	u, err := url.Parse(r.remoteURL)
	if err != nil || u.User == nil {
		return r.redact(r.remoteURL)
	}
	u.User = nil
	return u.String()
}

// redact removes every credential astra knows of from s.
func (r *Repo) redact(s string) string {
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, "***")
	}
	return s
}

// opError is an error whose message has been redacted. It unwraps to a
// sentinel (ErrRejected, ErrAuth, ...) and to the cause when the cause's own
// message holds no credential, so errors.Is works without leaking tokens.
type opError struct {
	msg   string
	kinds []error
}

func (e *opError) Error() string   { return e.msg }
func (e *opError) Unwrap() []error { return e.kinds }

// fail builds an opError: "<what>: <cause>; <hint>", redacted.
func (r *Repo) fail(kind error, what string, cause error, hint string) error {
	msg := what
	var kinds []error
	if kind != nil {
		kinds = append(kinds, kind)
	}
	if cause != nil {
		text := r.redact(cause.Error())
		msg += ": " + text
		if text == cause.Error() {
			kinds = append(kinds, cause)
		}
	}
	if hint != "" {
		msg += "; " + hint
	}
	return &opError{msg: r.redact(msg), kinds: kinds}
}

// transportError explains a failure to talk to the remote.
func (r *Repo) transportError(op string, err error) error {
	where := fmt.Sprintf("%s %s (%s)", op, r.opts.Remote, r.remoteDisplay())
	switch {
	case errors.Is(err, context.Canceled) || strings.Contains(err.Error(), context.Canceled.Error()):
		// An interrupt, not the network (go-git's UnexpectedError does not
		// unwrap, hence the text).
		return r.fail(context.Canceled, where+" was interrupted", nil, "")
	case errors.Is(err, transport.ErrAuthenticationRequired):
		return r.fail(ErrAuth, "authentication failed for "+r.remoteDisplay(), nil,
			"set GITHUB_TOKEN (a token with contents: write), or check the token actions/checkout stored in the git config")
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return r.fail(ErrAuth, "permission denied by "+r.remoteDisplay(), nil,
			"the token cannot write to this repository: give the workflow `permissions: contents: write`, or use a token that can")
	case errors.Is(err, transport.ErrRepositoryNotFound) && r.isHTTP():
		return r.fail(ErrAuth, where+": repository not found", nil,
			"check the remote URL, and that the token can see the repository (private repositories answer 404 without access)")
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return r.fail(nil, where+": repository not found", nil, "check the remote URL")
	}
	return r.fail(errkind.ErrInfra, where+" failed", err, "check the remote URL and network access")
}
