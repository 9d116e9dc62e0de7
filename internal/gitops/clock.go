package gitops

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
)

// ErrNoServerTime: the remote answers over ssh or from a path, which says
// no time, or there is no remote.
var ErrNoServerTime = errors.New("the git remote says no time")

// serverTimeout bounds the one request ServerTime makes.
const serverTimeout = 30 * time.Second

// ServerTime is the time the remote's server says it is: the Date header
// of its answer to a smart-HTTP ref advertisement (GET
// <url>/info/refs?service=git-upload-pack, the request every fetch
// starts with), with the credentials a push uses. Any answer counts, a
// 401 too: Date is the server's clock whatever it says about access. A
// remote over ssh or a path gives ErrNoServerTime, and so does an answer
// without a Date header; a remote that cannot be reached is
// errkind.ErrInfra.
func (r *Repo) ServerTime(ctx context.Context) (time.Time, error) {
	if !r.isHTTP() {
		return time.Time{}, ErrNoServerTime
	}
	u, err := url.Parse(r.remoteURL)
	if err != nil {
		return time.Time{}, ErrNoServerTime
	}
	user := u.User
	u.User = nil
	u.Path = strings.TrimSuffix(u.Path, "/") + "/info/refs"
	u.RawQuery = "service=git-upload-pack"
	ctx, cancel := context.WithTimeout(ctx, serverTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return time.Time{}, ErrNoServerTime
	}
	req.Header.Set("User-Agent", "git/astra")
	switch auth := r.auth.(type) {
	case interface{ SetAuth(*http.Request) }:
		auth.SetAuth(req)
	case nil:
		if pw, ok := user.Password(); ok {
			req.SetBasicAuth(user.Username(), pw)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return time.Time{}, errkind.Infra(r.fail(nil, fmt.Sprintf("asking %s (%s) the time", r.opts.Remote, r.remoteDisplay()), err, ""))
	}
	resp.Body.Close()
	t, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s answered without a Date header", ErrNoServerTime, r.remoteDisplay())
	}
	return t.UTC(), nil
}

// IsHTTP reports whether the remote is reached over http(s), whose
// answers say the time (ServerTime).
func (r *Repo) IsHTTP() bool { return r.isHTTP() }

// RemoteDisplay is the remote's URL without credentials, for messages.
func (r *Repo) RemoteDisplay() string { return r.remoteDisplay() }

// notesFile lists what this checkout has already told its user once
// (NoteOnce).
const notesFile = "astra-notes"

// NoteOnce reports whether this checkout has not noted note before, and
// notes it: a warning that holds for as long as the checkout lives is
// said once, not on every run. A note that cannot be kept counts as new.
func (r *Repo) NoteOnce(note string) bool {
	p := filepath.Join(r.commonDir, notesFile)
	b, _ := os.ReadFile(p)
	if slices.Contains(strings.Split(string(b), "\n"), note) {
		return false
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, _ = f.WriteString(note + "\n")
		_ = f.Close()
	}
	return true
}
