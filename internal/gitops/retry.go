package gitops

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/errkind"
)

// Default bounds of the remote's calls (Options.Timeout, Options.Budget).
const (
	DefaultTimeout = 2 * time.Minute
	DefaultBudget  = 5 * time.Minute
)

// Backoff between attempts: full jitter over an exponential step.
const (
	backoffBase = 500 * time.Millisecond
	backoffCap  = 15 * time.Second
)

// errBudget: the remote kept failing until the run's budget for it was
// spent.
var errBudget = errors.New("the run's time budget for the remote (git.budget) is spent")

// watchKey marks a context as a background watch's (Watch).
type watchKey struct{}

// Watch marks ctx as that of a watch beside a running tool (the look for a
// cancel): each of its calls to the remote is one attempt under
// git.timeout, not drawn from the run's git.budget and adding no warning,
// as the watch looks again at its next poll. Otherwise a long tool's
// polls would spend the budget the run's own commit and push need, and
// a watch would write the Repo's warnings beside a commit without its lock.
func Watch(ctx context.Context) context.Context { return context.WithValue(ctx, watchKey{}, true) }

// withRetry runs one call to the remote, op (for messages), under the
// per-call timeout, and again after transient failures (HTTP 5xx, a
// connection reset, a call that timed out; not a refused connection or
// an unknown host, which a wrong URL gives as well) with exponential
// backoff and jitter, as long as the run's budget for the remote lasts.
// The budget counts only time spent on the remote, so a hung remote holds
// the run (and the checkout's lock) for at most the budget beyond what
// its tools take. Every call of a Repo draws on the same budget.
func (r *Repo) withRetry(ctx context.Context, op string, call func(ctx context.Context) error) error {
	if ctx.Value(watchKey{}) != nil {
		cctx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
		defer cancel()
		return call(cctx)
	}
	start := time.Now()
	defer func() { r.netSpent.Add(int64(time.Since(start))) }()
	for attempt := 0; ; attempt++ {
		left := r.budgetLeft(start)
		if left <= 0 {
			return r.fail(errkind.ErrInfra, fmt.Sprintf("%s %s: %v", op, r.opts.Remote, errBudget), nil, "")
		}
		cctx, cancel := context.WithTimeout(ctx, min(r.opts.Timeout, left))
		err := call(cctx)
		timedOut := cctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		if err == nil || ctx.Err() != nil || !(timedOut || transient(err)) {
			return err
		}
		if timedOut {
			err = fmt.Errorf("%w (no answer within git.timeout, %v)", err, r.opts.Timeout)
		}
		step := backoffCap
		if attempt < 8 {
			step = min(backoffCap, backoffBase<<attempt)
		}
		wait := rand.N(step) + time.Millisecond
		if wait >= r.budgetLeft(start) {
			return fmt.Errorf("%w; gave up after %d attempt(s): %v", err, attempt+1, errBudget)
		}
		r.warnings = append(r.warnings, fmt.Sprintf("%s %s: attempt %d failed (%s), retried", op, r.opts.Remote, attempt+1, firstLine(err)))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// budgetLeft is what remains of the budget while a call started at start
// is running.
func (r *Repo) budgetLeft(start time.Time) time.Duration {
	return r.opts.Budget - time.Duration(r.netSpent.Load()) - time.Since(start)
}

// transientText matches the failures worth another attempt, by text:
// go-git's errors for HTTP statuses and broken connections do not unwrap.
var transientText = regexp.MustCompile(`(?i)status code: 5\d\d|\b50[0234]\b|connection reset|broken pipe|unexpected EOF|\bEOF\b|` +
	`timeout|deadline exceeded|no route to host|network is unreachable|server closed|TLS handshake`)

// transient reports whether err is a failure of the network or of the
// remote's server that may pass: never a refusal (a lost race, a protected
// branch, bad credentials, a missing repository) nor an interrupt.
func transient(err error) bool {
	for _, final := range []error{ErrRejected, ErrProtected, ErrAuth, ErrNoRemote, ErrNoRemoteBranch, context.Canceled} {
		if errors.Is(err, final) {
			return false
		}
	}
	return transientText.MatchString(err.Error())
}

func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
