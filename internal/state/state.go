// Package state rebuilds astra's run, budget and approval state by replaying
// the ledger. Nothing else is stored: the ledger is the database.
package state

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/money"
)

// KeyRetention is how long a completed manual or event idempotency key is
// remembered, from its completion: within it the key never runs again,
// whatever the date (month checkpoints carry it forward); after it, the
// same key is a new request. Longer than any month, so a key's life does
// not depend on when in a month it completed. Scheduled slots need no
// memory of their own: LastSlot covers them.
const KeyRetention = 35 * 24 * time.Hour

// rateWindow is the longest rate-limit window (per hour).
const rateWindow = time.Hour

// runKeep is how long run starts are kept after the newest one: the rate
// window, and as long again for a runner deciding at a slightly earlier
// time than runs another runner recorded meanwhile. Keeping them relative
// to the ledger rather than to Now makes them a function of the ledger.
const runKeep = 2 * rateWindow

// Statuses of open slots.
const (
	OpenClaimed = "claimed" // a runner owns it and has not recorded an outcome
	OpenRetry   = "retry"   // failed; runs again once RetryAt has passed
)

// State is what replay knows at Now.
//
// Everything but Now and the views at Now (Spend, Pauses) is a function of
// the ledger alone, whatever Now is: that is what a snapshot stores (see
// snapshot.go), and a new exported field is stored with it automatically.
type State struct {
	Now time.Time `json:"-"`

	snapshot

	Spend   Spend              `json:"-"` // the day and month of Now: a view of DaySpend and MonthSpend
	Alerted map[string]bool    `json:"alerted"`
	Pauses  map[string]*Pause  `json:"-"`               // active pauses at Now, by period ("day", "month"): a view of Paused
	Resumed map[string]*Resume `json:"resumed"`         // "day:2026-11-22": a person resumed that period, with its bound
	Events  int                `json:"events"`          // events replayed since the newest checkpoint (the whole ledger without one)
	Moved   *Move              `json:"moved,omitempty"` // the newest ledger.migrated event replayed (see Home)

	DaySpend   map[string]Cost   `json:"day_spend"`   // by UTC day, "2026-11-22"
	MonthSpend map[string]Cost   `json:"month_spend"` // by UTC month, "2026-11"
	Paused     map[string]*Pause `json:"paused"`      // pauses not resumed since, by "<period>:<day or month>"

	// dayStr caches the day string of the last event's day: replay would
	// otherwise format a date per event.
	dayIdx int64
	dayStr string
	claims map[string]map[int64]int // open tier-1+ claims by schedule and day
	// reserved is what open claims may still spend (their cost caps), by
	// UTC day index and by month ("2026-11"), so admission need not scan.
	reservedDay   map[int64]money.USD
	reservedMonth map[string]money.USD
	latestRun     time.Time  // the newest run start in ActorRuns
	fallback      string     // why a snapshot could not be used (see Fallback)
	snapHead      int64      // the seq of the snapshot the state was loaded from; 0 when replayed
	decided       []Decision // people's decisions this load replayed (rules.go)
	// deadSaved is the sha256 of the snapshot's dead letters file while
	// it holds DeadLetters as they are; "" once they change, or when they
	// were replayed (see SaveSnapshot).
	deadSaved string
	// stopped is the key whose cancelled attempt the event before ended,
	// for the retry or dead letter recorded with that end.
	stopped string
}

// Cost is what runs spent in one period.
type Cost struct {
	USD    money.USD `json:"usd"`
	Tokens int64     `json:"tokens"`
}

// add is c with a run's usage added, saturating.
func (c Cost) add(u ledger.Usage) Cost {
	return Cost{USD: c.USD.Add(u.Cost), Tokens: ledger.AddCount(c.Tokens, u.Tokens)}
}

// dayIndex numbers UTC days, for cheap comparisons.
func dayIndex(t time.Time) int64 { return t.Unix() / 86400 }

func sameMonth(a, b time.Time) bool {
	a, b = a.UTC(), b.UTC()
	return a.Year() == b.Year() && a.Month() == b.Month()
}

// day is Day(t), cached for runs of events on the same day.
func (s *State) day(t time.Time) string {
	if i := dayIndex(t); i != s.dayIdx || s.dayStr == "" {
		s.dayIdx, s.dayStr = i, Day(t)
	}
	return s.dayStr
}

// snapshot is the part of the state a month checkpoint carries forward.
type snapshot struct {
	Schedules   map[string]*Schedule   `json:"schedules"`
	Open        map[string]*Open       `json:"open"`                // by idempotency key
	Done        map[string]time.Time   `json:"done"`                // completed manual/event keys
	DeadLetters map[string]*DeadLetter `json:"dead_letters"`        // by idempotency key
	Approvals   map[string]*Approval   `json:"approvals"`           // open request, by schedule id
	Consumed    map[string]time.Time   `json:"consumed"`            // hash of a used approval token -> its expiry
	Reported    map[string]time.Time   `json:"reported"`            // "<kind>:<token hash>" of token notes recorded -> their expiry
	Known       map[string]string      `json:"known"`               // schedule id -> definition hash
	Signatures  map[string]time.Time   `json:"signatures"`          // trigger signature id or JWT id -> when it stops being accepted
	Granted     map[string]*Grant      `json:"granted"`             // idempotency key of an open run that consumed an approval -> that approval
	RolledBack  map[string]time.Time   `json:"rolled_back"`         // run id -> when its rollback completed
	ActorRuns   map[string][]time.Time `json:"actor_runs"`          // run starts within RateWindow
	Early       map[string]time.Time   `json:"early"`               // own slots run early by a clock a correction voided: key -> slot (correct.go)
	Tampered    map[string]time.Time   `json:"tampered"`            // seq of a ledger.tampered no trust.resumed acknowledged since -> its ts
	Breached    map[string]*Breach     `json:"breached"`            // seq of an event that broke a rule, until a ledger.tampered names it (rules.go)
	LastTick    *Tick                  `json:"last_tick,omitempty"` // the newest tick recorded
	Stopped     *Stop                  `json:"stopped,omitempty"`   // astra pause --all not resumed since
}

// Stop is the emergency stop in force (ledger.AstraPaused): nothing
// starts until a person resumes.
type Stop struct {
	At     time.Time `json:"at"`
	By     string    `json:"by"`
	Reason string    `json:"reason"`
}

// TickEvery is how often a cron tick that recorded nothing else is
// recorded: often enough for `astra status` to tell a stopped cron, rare
// enough that an idle repository is not one commit per tick.
const TickEvery = time.Hour

// Tick is a recorded cron tick (ledger.Tick).
type Tick struct {
	At     time.Time `json:"at"`
	Status string    `json:"status"` // ok | failed
	Runner string    `json:"runner,omitempty"`
	TickDetail
}

// TickDetail is the Detail of a tick: what it came to.
type TickDetail struct {
	Ran              int `json:"ran"`
	Failed           int `json:"failed"`
	Skipped          int `json:"skipped"`
	AwaitingApproval int `json:"awaiting_approval"`
}

// Schedule is what the ledger says about one schedule.
type Schedule struct {
	CreatedAt  time.Time `json:"created_at"`
	LastSlot   time.Time `json:"last_slot"`   // newest own scheduled slot with any event
	DecidedAt  time.Time `json:"decided_at"`  // ts of the last event about one of its own slots: when a run last served it
	LastRunAt  time.Time `json:"last_run_at"` // last completed or failed run
	LastStatus string    `json:"last_status"` // completed | failed | skipped:<reason>
	Day        string    `json:"day"`         // the UTC day Consumed counts (last_reset)
	Consumed   int       `json:"consumed"`    // successful tier>=1 runs on Day
	Deleted    bool      `json:"deleted,omitempty"`
	// Disabled: its definition says enabled: false, recorded first at
	// DisabledAt; its slots are not due, and its retries wait.
	Disabled   bool      `json:"disabled,omitempty"`
	DisabledAt time.Time `json:"disabled_at,omitzero"`
	// Settings: the definition's settings as its last schedule.created or
	// updated recorded them (values of secret ones by hash), for the next
	// schedule.updated to say what changed.
	Settings *Settings `json:"settings,omitempty"`
}

// Settings are a schedule definition's settings by dotted name (a struct,
// so that the snapshot stores them as one JSON column).
type Settings struct {
	Fields map[string]string `json:"fields"`
}

// Open is a slot that has started but not ended.
type Open struct {
	ScheduleID string    `json:"schedule_id"`
	Slot       time.Time `json:"slot"`
	Mode       string    `json:"mode"`
	Status     string    `json:"status"` // OpenClaimed | OpenRetry
	Attempt    int       `json:"attempt"`
	RetryAt    time.Time `json:"retry_at,omitzero"`
	ClaimedAt  time.Time `json:"claimed_at,omitzero"`
	Deadline   time.Time `json:"deadline,omitzero"` // a claim past this is lost
	Runner     string    `json:"runner,omitempty"`
	TraceID    string    `json:"trace_id,omitempty"`
	Actor      string    `json:"actor,omitempty"`
	Tool       string    `json:"tool,omitempty"`
	Tier       int       `json:"tier,omitempty"`
	Error      string    `json:"error,omitempty"`   // last failure, for a retry
	Reserve    money.USD `json:"reserve,omitempty"` // a claim's cost cap, held against the global budget until its outcome
	// A claim astra plan made for a job of a GitHub Actions matrix, which
	// takes it (run.started) and runs it with astra run --claim.
	Plan *PlanDetail `json:"plan,omitempty"`
	// Released: a retry a person asked for (dead-letter retry), not a backoff.
	Released bool `json:"released,omitempty"`
	// Cancelled: a person cancelled the running attempt (astra cancel); its
	// runner stops it, and its end closes the slot with no retry.
	Cancelled *Cancelled `json:"cancelled,omitempty"`
}

// Cancelled is who cancelled a running attempt, when and why.
type Cancelled struct {
	Seq    int64     `json:"seq"`
	At     time.Time `json:"at"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// PlanDetail is what a fan-out claim carries for its job: how the plan
// decided it (the Detail of its run.claimed), and when a job took it.
type PlanDetail struct {
	Approved bool            `json:"approved,omitempty"` // the claim consumed an approval: the job runs it as approved
	Event    json.RawMessage `json:"event,omitempty"`    // the triggering event, as approved
	Action   json.RawMessage `json:"action,omitempty"`   // the action approved: the job checks it again before it runs
	Started  time.Time       `json:"started,omitzero"`   // when a job took it (run.started)
}

// DeadLetter is a slot that failed every attempt (a dead letter).
type DeadLetter struct {
	Key        string    `json:"key"`
	ScheduleID string    `json:"schedule_id"`
	Slot       time.Time `json:"slot"`
	Mode       string    `json:"mode"`
	Attempts   int       `json:"attempts"`
	Error      string    `json:"error,omitempty"`
	At         time.Time `json:"at"`
	TraceID    string    `json:"trace_id,omitempty"`
}

// Approval is the open approval request of a schedule (one per schedule),
// or an approval waiting to be used.
type Approval struct {
	Key         string          `json:"key"` // the run it approves
	Slot        time.Time       `json:"slot"`
	Status      string          `json:"status"` // pending | partial (approved by some of its approvers, nothing requested) | approved
	PR          int             `json:"pr,omitempty"`
	Branch      string          `json:"branch,omitempty"`
	Head        string          `json:"head,omitempty"`   // the commit astra wrote as its pull request's head
	Token       string          `json:"token,omitempty"`  // hash of the token bytes astra wrote, or of the signed token
	Action      json.RawMessage `json:"action,omitempty"` // the action requested and approved (approval.Action)
	Event       json.RawMessage `json:"event,omitempty"`  // the triggering event, as approved
	PayloadHash string          `json:"payload_hash,omitempty"`
	RequestedAt time.Time       `json:"requested_at"`
	ExpiresAt   time.Time       `json:"expires_at"`
	By          string          `json:"by,omitempty"`
	Comment     string          `json:"comment,omitempty"`  // what the approver said (--reason)
	Via         string          `json:"via,omitempty"`      // how it was approved: pull-request | signature
	Signer      string          `json:"signer,omitempty"`   // the fingerprint of the approver's key (via signature)
	Proof       json.RawMessage `json:"proof,omitempty"`    // the signed token (via signature), checked again at use
	Rollback    bool            `json:"rollback,omitempty"` // it approves the rollback of the run Key names, not a run
	TraceID     string          `json:"trace_id,omitempty"`
	Mode        string          `json:"mode,omitempty"`   // of the run waiting for it
	Quorum      *Quorum         `json:"quorum,omitempty"` // when it needs several approvers: who approved it so far
}

// Quorum is the approvers of an approval that needs several
// (approvals_required).
type Quorum struct {
	Required  int      `json:"required"`
	Approvers []string `json:"approvers,omitempty"`
	// Reviewers are the approvers who approved with a review of the
	// approval pull request (the others signed, or merged it).
	Reviewers []string `json:"reviewers,omitempty"`
	// Proofs are the signed tokens of those who signed, by lower-cased
	// login: a run checks each signature again before it uses the
	// approval, not only the last approver's.
	Proofs map[string]json.RawMessage `json:"proofs,omitempty"`
}

// Approvers are who approved a so far, when it needs several.
func (a *Approval) Approvers() []string {
	if a.Quorum == nil {
		return nil
	}
	return a.Quorum.Approvers
}

// Reviewers are who approved a with a review of its pull request.
func (a *Approval) Reviewers() []string {
	if a.Quorum == nil {
		return nil
	}
	return a.Quorum.Reviewers
}

// ApprovedBy reports whether who has approved a, case-insensitively.
func (a *Approval) ApprovedBy(who string) bool { return a.Quorum != nil && a.Quorum.has(who) }

func (q *Quorum) has(who string) bool {
	return slices.ContainsFunc(q.Approvers, func(b string) bool { return strings.EqualFold(b, who) })
}

// Grant is the approval an open run consumed: its retries run only while
// the action is still the one approved.
type Grant struct {
	By     string          `json:"by"`
	Action json.RawMessage `json:"action"`
	// Quorum holds all who approved it when it needed several (By among
	// them; no proofs): each must still be an approver for a retry to run
	// under it.
	Quorum *Quorum `json:"quorum,omitempty"`
}

// Approvers are all who approved g when it needed several, else none.
func (g *Grant) Approvers() []string {
	if g.Quorum == nil {
		return nil
	}
	return g.Quorum.Approvers
}

// How an approval was given (Approval.Via).
const (
	ViaPullRequest = "pull-request"
	ViaSignature   = "signature"
)

// Spend is what runs cost in the current UTC day and month.
type Spend struct {
	Day, Month             money.USD
	DayTokens, MonthTokens int64
}

// Pause is an active global-budget pause.
type Pause struct {
	Period string    `json:"period"` // day | month
	Since  time.Time `json:"since"`  // when it was recorded
	Mode   string    `json:"mode"`   // the on_limit_reached action in force
}

// Resume is a person's lift of a period's pause, and its bound: a new
// ceiling for the rest of the period, or no limit until a time (never past
// the period's end: the next period starts under the policy's limits).
// Neither (resumes recorded before they took a bound): no limit for the
// rest of the period.
type Resume struct {
	Ceiling money.USD `json:"ceiling"` // the period's limit from the resume on; 0: see Until
	Until   time.Time `json:"until"`   // no limit before it, the policy's limit from it
}

// New returns an empty state at now.
func New(now time.Time) *State {
	return &State{Now: now.UTC(), snapshot: emptySnapshot(), Alerted: map[string]bool{}, Resumed: map[string]*Resume{}, Pauses: map[string]*Pause{},
		DaySpend: map[string]Cost{}, MonthSpend: map[string]Cost{}, Paused: map[string]*Pause{}}
}

func emptySnapshot() snapshot {
	return snapshot{
		Schedules:   map[string]*Schedule{},
		Open:        map[string]*Open{},
		Done:        map[string]time.Time{},
		DeadLetters: map[string]*DeadLetter{},
		Approvals:   map[string]*Approval{},
		Consumed:    map[string]time.Time{},
		Reported:    map[string]time.Time{},
		Signatures:  map[string]time.Time{},
		Granted:     map[string]*Grant{},
		RolledBack:  map[string]time.Time{},
		Known:       map[string]string{},
		ActorRuns:   map[string][]time.Time{},
		Early:       map[string]time.Time{},
		Tampered:    map[string]time.Time{},
		Breached:    map[string]*Breach{},
	}
}

// Day names the UTC day budgets reset on; month the UTC month.
func Day(t time.Time) string   { return t.UTC().Format(time.DateOnly) }
func month(t time.Time) string { return ledger.Month(t) }

// periodOf names the budget period ("day" or "month") that t falls in.
func periodOf(period string, t time.Time) string {
	if period == "month" {
		return month(t)
	}
	return Day(t)
}

// ResumedIn is the resume of the current period, nil when none.
func (s *State) ResumedIn(period string) *Resume {
	return s.Resumed[period+":"+periodOf(period, s.Now)]
}

// Limit is the limit of period at Now given the policy's: a resume's
// ceiling; none while a resume without one lasts; else the policy's.
// limited is false when nothing limits the period.
func (s *State) Limit(period string, policy money.USD) (limit money.USD, limited bool) {
	r := s.ResumedIn(period)
	switch {
	case r == nil || policy <= 0:
		return policy, policy > 0
	case r.Ceiling > 0:
		return r.Ceiling, true
	case !r.Until.IsZero() && !s.Now.Before(r.Until):
		return policy, true
	}
	return 0, false
}

// Reserved is what the open claims of the current day or month may still
// spend: the cost caps of claims (of every runner, and a plan's queued
// jobs) with no outcome yet. A claim past its deadline holds nothing: its
// runner is gone (the next run records it lost), so no batch holds the
// budget beyond its claims' deadlines.
func (s *State) Reserved(period string) money.USD {
	r := s.reservedDay[dayIndex(s.Now)]
	if period == "month" {
		r = s.reservedMonth[month(s.Now)]
	}
	if r == 0 {
		return 0
	}
	for _, o := range s.Open {
		if o.Status == OpenClaimed && o.Reserve > 0 && !o.Deadline.IsZero() && !s.Now.Before(o.Deadline) &&
			periodOf(period, o.ClaimedAt) == periodOf(period, s.Now) {
			r -= o.Reserve
		}
	}
	return max(r, 0)
}

// Spent is the spend of the current day or month.
func (s *State) Spent(period string) money.USD {
	if period == "month" {
		return s.Spend.Month
	}
	return s.Spend.Day
}

// AlertKey names one alert threshold within one budget period, so each
// alert is raised once per period.
func AlertKey(period string, t time.Time, threshold float64) string {
	return period + ":" + periodOf(period, t) + ":" + strconv.FormatFloat(threshold, 'g', -1, 64)
}

func (s *State) schedule(id string) *Schedule {
	sc := s.Schedules[id]
	if sc == nil {
		sc = &Schedule{}
		s.Schedules[id] = sc
	}
	return sc
}

// ConsumedToday is the per-day run budget's "consumed" of a schedule at Now:
// successful runs today plus today's claims without an outcome yet, so
// concurrent runners cannot overrun a budget between them.
func (s *State) ConsumedToday(id string) int {
	n := s.claims[id][dayIndex(s.Now)]
	if sc := s.Schedules[id]; sc != nil && sc.Day == Day(s.Now) {
		n += sc.Consumed
	}
	return n
}

// putOpen and delOpen change Open and keep the claim counts in step.
func (s *State) putOpen(key string, o *Open) {
	s.delOpen(key)
	s.Open[key] = o
	s.countClaim(o, 1)
	s.reserve(o, 1)
}

func (s *State) delOpen(key string) {
	if o := s.Open[key]; o != nil {
		s.countClaim(o, -1)
		s.reserve(o, -1)
		delete(s.Open, key)
	}
}

// reserve adds (d=1) or removes (d=-1) an open claim's cost cap.
func (s *State) reserve(o *Open, d money.USD) {
	if o.Status != OpenClaimed || o.Reserve == 0 {
		return
	}
	if s.reservedDay == nil {
		s.reservedDay, s.reservedMonth = map[int64]money.USD{}, map[string]money.USD{}
	}
	s.reservedDay[dayIndex(o.ClaimedAt)] += d * o.Reserve
	s.reservedMonth[month(o.ClaimedAt)] += d * o.Reserve
}

// countClaim tracks open tier-1+ claims per schedule and day, so budget
// checks need not scan every open slot.
func (s *State) countClaim(o *Open, d int) {
	if o.Status != OpenClaimed || o.Tier < 1 {
		return
	}
	if s.claims == nil {
		s.claims = map[string]map[int64]int{}
	}
	m := s.claims[o.ScheduleID]
	if m == nil {
		m = map[int64]int{}
		s.claims[o.ScheduleID] = m
	}
	m[dayIndex(o.ClaimedAt)] += d
}

// RunsSince counts an actor's run starts after t.
func (s *State) RunsSince(actor string, t time.Time) int {
	n := 0
	for _, ts := range s.ActorRuns[actor] {
		if ts.After(t) {
			n++
		}
	}
	return n
}

// Completed says when a manual or event key completed, if it did within
// KeyRetention of Now.
func (s *State) Completed(key string) (time.Time, bool) {
	t, ok := s.Done[key]
	return t, ok && s.Now.Sub(t) < KeyRetention
}

// Quarantined reports whether a schedule has an unreleased dead letter.
func (s *State) Quarantined(id string) bool {
	for _, d := range s.DeadLetters {
		if d.ScheduleID == id {
			return true
		}
	}
	return false
}

// RollbackWindow is how far back `astra rollback` finds completed runs;
// whether one was rolled back is remembered as long.
const RollbackWindow = 62 * 24 * time.Hour

// RollbackDetail is the Detail of rollback events: the run undone.
type RollbackDetail struct {
	Run string `json:"run"`
}

// TriggerDetail is the Detail of trigger.accepted: what authenticated it,
// so that nothing is accepted twice.
type TriggerDetail struct {
	Key         string    `json:"key"`
	Signature   string    `json:"signature"`              // a timestamped signature's id (its expiry is the event's expires_at)
	Identity    string    `json:"identity"`               // who triggered, in words
	GitHubEvent string    `json:"github_event,omitempty"` // the X-GitHub-Event a relayed delivery's signature was checked with
	JWT         string    `json:"jwt,omitempty"`          // a JWT's id (a hash of its issuer and jti)
	JWTExpires  time.Time `json:"jwt_expires,omitzero"`   // its exp: the id is kept until then
}

// ApprovalDetail is the Detail of approval events: what binds an approval
// to the request astra made and to the action it approves.
type ApprovalDetail struct {
	Token    string          `json:"token,omitempty"`    // hash of the exact token bytes astra wrote, or of a signed token
	Branch   string          `json:"branch,omitempty"`   // the request's pull request branch
	Head     string          `json:"head,omitempty"`     // the commit astra wrote as its pull request's head
	Action   json.RawMessage `json:"action,omitempty"`   // the action (approval.Action: hash, components, files, version)
	Event    json.RawMessage `json:"event,omitempty"`    // a triggering event's payload, as approved
	Via      string          `json:"via,omitempty"`      // approval.approved: pull-request | signature
	Signer   string          `json:"signer,omitempty"`   // approval.approved via signature: the key's fingerprint
	Proof    json.RawMessage `json:"proof,omitempty"`    // approval.approved via signature: the signed token, so a use checks the signature itself
	Rollback bool            `json:"rollback,omitempty"` // the request is for the rollback of the run its key names
	Settles  bool            `json:"settles,omitempty"`  // approval.refused: the request ends with it
	Required int             `json:"required,omitempty"` // approval.approved: the distinct approvers the approval needs, when more than one
	// Reviewers are, on approval.approved through a pull request that
	// needs several approvers, those who approved it with a review; a run
	// reads the reviews again through GitHub before it uses the approval.
	Reviewers []string `json:"reviewers,omitempty"`
}

// ReviewersOf are the reviewers e, an approval event with detail d,
// counts: only a merge of a pull request (its reviews are read again
// through GitHub at use) has any.
func (d ApprovalDetail) ReviewersOf(e *ledger.Event) []string {
	if e.Event != ledger.ApprovalApproved || e.Status != ledger.StatusApproved || d.Via != ViaPullRequest {
		return nil
	}
	return d.Reviewers
}

// planOf is the plan detail of a fan-out claim, nil for any other.
func planOf(e *ledger.Event) *PlanDetail {
	if e.Reason != ledger.ReasonFanOut {
		return nil
	}
	d := &PlanDetail{}
	_ = json.Unmarshal(e.Detail, d) // absent: a plain claim for a job
	d.Started = time.Time{}         // only run.started says when a job took it
	return d
}

func detailOf(e *ledger.Event) ApprovalDetail {
	var d ApprovalDetail
	_ = json.Unmarshal(e.Detail, &d) // absent or unreadable: no detail
	return d
}

// ReportedKey names a token note (refused, ignored) recorded once.
func ReportedKey(kind ledger.Kind, token string) string { return string(kind) + ":" + token }

// ownSlot reports whether e is about a schedule's own cron or interval
// slot, keyed "<id>@<slot>": not a manual run or an event (other modes),
// nor a chained step, whose key is its parent's key plus ">" and its id.
func ownSlot(e *ledger.Event) bool {
	k, id := e.IdempotencyKey, e.ScheduleID
	return e.Mode == ledger.ModeScheduled && !e.Slot.IsZero() && id != "" &&
		len(k) == len(id)+1+len(ledger.TimeLayout) && k[len(id)] == '@' && k[:len(id)] == id
}

// Apply folds one event into the state. Events must come in ledger order.
func (s *State) Apply(e *ledger.Event) {
	s.Events++
	stopped := s.stopped
	s.stopped = ""
	if stopped == e.IdempotencyKey && (e.Event == ledger.RunRetryScheduled || e.Event == ledger.RunDeadLettered) {
		// Recorded with the end of an attempt cancelled meanwhile (by a
		// runner that had not seen the cancel): the slot is closed.
		return
	}
	if e.Event == ledger.ApprovalConsumed || e.Event == ledger.ApprovalApproved {
		s.check(e)
	}
	s.decision(e)
	if ownSlot(e) {
		s.served(e)
	}
	switch e.Event {
	case ledger.RunClaimed, ledger.RunStarted, ledger.RunCompleted, ledger.RunFailed, ledger.RunRetryScheduled,
		ledger.RunDeadLettered, ledger.DeadLetterReleased, ledger.RunSkipped:
		s.applyRun(e)
	case ledger.ApprovalRequested, ledger.ApprovalApproved, ledger.ApprovalRejected, ledger.ApprovalExpired,
		ledger.ApprovalConsumed, ledger.ApprovalRefused, ledger.ApprovalIgnored:
		s.applyApproval(e)
	case ledger.RunCancelled:
		if o := s.Open[e.IdempotencyKey]; o != nil && o.Status == OpenClaimed && (o.Plan == nil || !o.Plan.Started.IsZero()) {
			// A running attempt: its end (or its loss) closes it.
			o.Cancelled = &Cancelled{Seq: e.Seq, At: e.TS, By: e.By, Reason: e.Error}
			break
		}
		// A pending retry or approval request, or a plan's claim no job
		// took yet (a job that takes it later finds it closed), withdrawn.
		s.delOpen(e.IdempotencyKey)
		delete(s.Granted, e.IdempotencyKey)
		if a := s.Approvals[e.ScheduleID]; a != nil && a.Key == e.IdempotencyKey {
			delete(s.Approvals, e.ScheduleID)
		}
	case ledger.BudgetWarning, ledger.BudgetExceeded, ledger.BudgetPaused, ledger.BudgetResumed:
		s.applyBudget(e)
	case ledger.ScheduleCreated, ledger.ScheduleUpdated, ledger.ScheduleDeleted:
		s.applySchedule(e)
	case ledger.TriggerAccepted:
		var d TriggerDetail
		if json.Unmarshal(e.Detail, &d) == nil {
			if d.Signature != "" {
				s.Signatures[d.Signature] = e.ExpiresAt
			}
			if d.JWT != "" {
				s.Signatures[d.JWT] = d.JWTExpires
			}
		}
	case ledger.RollbackCompleted:
		var d RollbackDetail
		if json.Unmarshal(e.Detail, &d) == nil && d.Run != "" {
			s.RolledBack[d.Run] = e.TS
		}
	case ledger.LedgerCheckpoint:
		if e.Status == ledger.StatusContinued {
			s.merge(e.Detail)
		} else {
			s.restore(e.Detail)
		}
	case ledger.Tick:
		t := &Tick{At: e.TS, Status: e.Status, Runner: e.Runner}
		_ = json.Unmarshal(e.Detail, &t.TickDetail) // counts are for people; a tick without them is still a tick
		s.LastTick = t
	case ledger.LedgerMigrated:
		s.Moved = moveOf(e)
	case ledger.ClockCorrected:
		s.correct(e)
	case ledger.LedgerTampered:
		s.Tampered[strconv.FormatInt(e.Seq, 10)] = e.TS
		s.reported(e)
	case ledger.TrustResumed:
		clear(s.Tampered)
	case ledger.AstraPaused:
		p := &Stop{}
		_ = json.Unmarshal(e.Detail, p) // its reason; a pause without one still stops
		p.At, p.By = e.TS, e.By
		s.Stopped = p
	case ledger.AstraResumed:
		s.Stopped = nil
	}
}

// served notes an event about one of a schedule's own slots: the newest
// slot decided, and when a run last served it.
func (s *State) served(e *ledger.Event) {
	sc := s.schedule(e.ScheduleID)
	if e.Slot.After(sc.LastSlot) {
		sc.LastSlot = e.Slot
	}
	sc.DecidedAt = e.TS
}

// applyRun folds an event of a run's life: claimed, started by a job,
// ended, to be retried, dead-lettered and released, or skipped.
func (s *State) applyRun(e *ledger.Event) {
	switch e.Event {
	case ledger.RunClaimed:
		s.putOpen(e.IdempotencyKey, &Open{
			ScheduleID: e.ScheduleID, Slot: e.Slot, Mode: e.Mode, Status: OpenClaimed, Attempt: max(e.Attempt, 1),
			ClaimedAt: e.TS, Deadline: e.ExpiresAt, Runner: e.Runner, TraceID: e.TraceID, Actor: e.Actor, Tool: e.Tool, Tier: e.Tier,
			Reserve: e.Limit, Plan: planOf(e),
		})
		if e.Actor != "" {
			s.addRun(e.Actor, e.TS)
		}
	case ledger.RunStarted:
		// A job took its plan's claim: from now on the claim is its own,
		// until a deadline measured from its start.
		if o := s.Open[e.IdempotencyKey]; o != nil && o.Status == OpenClaimed && o.Plan != nil {
			o.Plan.Started, o.Runner, o.Deadline = e.TS, e.Runner, e.ExpiresAt
		}
	case ledger.RunCompleted, ledger.RunFailed:
		s.ended(e)
		if e.Event == ledger.RunCompleted {
			delete(s.Granted, e.IdempotencyKey)
		}
	case ledger.RunRetryScheduled:
		s.putOpen(e.IdempotencyKey, &Open{
			ScheduleID: e.ScheduleID, Slot: e.Slot, Mode: e.Mode, Status: OpenRetry, Attempt: max(e.Attempt, 1),
			RetryAt: e.RetryAt, TraceID: e.TraceID, Actor: e.Actor, Tool: e.Tool, Tier: e.Tier, Error: e.Error,
		})
	case ledger.RunDeadLettered:
		s.delOpen(e.IdempotencyKey)
		delete(s.Granted, e.IdempotencyKey) // a released dead letter needs a new approval
		s.deadSaved = ""
		s.DeadLetters[e.IdempotencyKey] = &DeadLetter{
			Key: e.IdempotencyKey, ScheduleID: e.ScheduleID, Slot: e.Slot, Mode: e.Mode, Attempts: e.Attempt, Error: e.Error,
			At: e.TS, TraceID: e.TraceID,
		}
	case ledger.DeadLetterReleased:
		if d := s.DeadLetters[e.IdempotencyKey]; d != nil {
			delete(s.DeadLetters, e.IdempotencyKey)
			s.deadSaved = ""
			// The next attempt after the last: a run id names one execution.
			s.putOpen(e.IdempotencyKey, &Open{
				ScheduleID: d.ScheduleID, Slot: d.Slot, Mode: d.Mode, Status: OpenRetry, Attempt: max(d.Attempts, 1) + 1, RetryAt: e.TS,
				TraceID: d.TraceID, Actor: e.Actor, Tool: e.Tool, Tier: e.Tier, Released: true,
			})
		}
	case ledger.RunSkipped:
		if e.ScheduleID != "" {
			s.schedule(e.ScheduleID).LastStatus = "skipped:" + e.Reason
		}
		// A skip ends whatever was open for the key (a lost claim, a retry
		// that is no longer allowed).
		s.delOpen(e.IdempotencyKey)
		delete(s.Granted, e.IdempotencyKey)
	}
}

// ended folds a run's outcome: the claim closes, a tier-1 success counts
// against the day's run budget, a manual or event key is done, and what
// it spent is added.
func (s *State) ended(e *ledger.Event) {
	if o := s.Open[e.IdempotencyKey]; o != nil && o.Cancelled != nil {
		s.stopped = e.IdempotencyKey
	}
	s.delOpen(e.IdempotencyKey)
	sc := s.schedule(e.ScheduleID)
	sc.LastRunAt = e.TS
	if e.Event == ledger.RunCompleted {
		sc.LastStatus = "completed"
		if e.Tier >= 1 {
			if d := s.day(e.TS); sc.Day != d {
				sc.Day, sc.Consumed = d, 0
			}
			sc.Consumed++
		}
		if !ownSlot(e) {
			s.Done[e.IdempotencyKey] = e.TS
		}
	} else {
		sc.LastStatus = "failed"
	}
	s.addSpend(e)
}

// applyApproval folds an approval request and what became of it.
func (s *State) applyApproval(e *ledger.Event) {
	switch e.Event {
	case ledger.ApprovalRequested:
		d := detailOf(e)
		a := &Approval{
			Key: e.IdempotencyKey, Slot: e.Slot, Status: ledger.StatusPending, PR: e.PR, PayloadHash: e.PayloadHash,
			RequestedAt: e.TS, ExpiresAt: e.ExpiresAt, TraceID: e.TraceID, Mode: e.Mode,
			Branch: d.Branch, Head: d.Head, Token: d.Token, Action: d.Action, Event: d.Event, Rollback: d.Rollback,
		}
		if old := s.Approvals[e.ScheduleID]; old != nil && old.Key == a.Key && old.Status == ledger.StatusPartial && bytes.Equal(old.Action, a.Action) {
			// Approvers who signed ahead of the request count towards it.
			a.Quorum = old.Quorum
		}
		s.Approvals[e.ScheduleID] = a
	case ledger.ApprovalApproved:
		s.approved(e)
	case ledger.ApprovalRejected, ledger.ApprovalExpired:
		if a := s.Approvals[e.ScheduleID]; a != nil && (e.IdempotencyKey == "" || a.Key == e.IdempotencyKey) {
			delete(s.Approvals, e.ScheduleID)
		}
	case ledger.ApprovalConsumed:
		var quorum *Quorum
		if a := s.Approvals[e.ScheduleID]; a != nil && a.Key == e.IdempotencyKey && a.Quorum != nil {
			quorum = &Quorum{Required: a.Quorum.Required, Approvers: a.Quorum.Approvers}
		}
		delete(s.Approvals, e.ScheduleID)
		d := detailOf(e)
		if d.Token != "" {
			s.Consumed[d.Token] = e.ExpiresAt
		}
		if len(d.Action) > 0 && !d.Rollback {
			// Its retries run only while the action is still this one.
			s.Granted[e.IdempotencyKey] = &Grant{By: e.By, Action: d.Action, Quorum: quorum}
		}
	case ledger.ApprovalRefused, ledger.ApprovalIgnored:
		d := detailOf(e)
		if d.Token != "" {
			s.Reported[ReportedKey(e.Event, d.Token)] = e.ExpiresAt
		}
		if a := s.Approvals[e.ScheduleID]; d.Settles && a != nil && a.Key == e.IdempotencyKey {
			delete(s.Approvals, e.ScheduleID)
		}
	}
}

// approved folds an approval: of the open request, or of a slot nothing
// requested yet (a signed approval).
func (s *State) approved(e *ledger.Event) {
	d := detailOf(e)
	a := s.Approvals[e.ScheduleID]
	if a == nil || a.Key != e.IdempotencyKey {
		a = &Approval{Key: e.IdempotencyKey, Slot: e.Slot, RequestedAt: e.TS, TraceID: e.TraceID, Mode: e.Mode, PayloadHash: e.PayloadHash,
			Event: d.Event, Rollback: d.Rollback, ExpiresAt: e.ExpiresAt}
		s.Approvals[e.ScheduleID] = a
		if e.Status == ledger.StatusPartial {
			a.Status = ledger.StatusPartial
		}
	}
	if d.Required > 1 {
		q := &Quorum{Required: d.Required, Approvers: slices.Clip(a.Approvers()), Reviewers: slices.Clip(a.Reviewers())}
		reviewers := d.ReviewersOf(e)
		for _, who := range append([]string{e.By}, reviewers...) {
			if !q.has(who) {
				q.Approvers = append(q.Approvers, who)
			}
		}
		for _, who := range reviewers {
			if !slices.ContainsFunc(q.Reviewers, func(r string) bool { return strings.EqualFold(r, who) }) {
				q.Reviewers = append(q.Reviewers, who)
			}
		}
		if a.Quorum != nil {
			q.Proofs = maps.Clone(a.Quorum.Proofs)
		}
		if d.Via == ViaSignature && len(d.Proof) > 0 {
			if q.Proofs == nil {
				q.Proofs = map[string]json.RawMessage{}
			}
			q.Proofs[strings.ToLower(e.By)] = d.Proof
		}
		a.Quorum = q
	}
	if len(d.Action) > 0 {
		a.Action = d.Action
	}
	if e.Status == ledger.StatusPartial {
		// One of several approvers: the request stays open (pending, or
		// partial when nothing requested it yet) until the last one.
		return
	}
	a.Status, a.By, a.Via, a.Signer, a.Comment = ledger.StatusApproved, e.By, d.Via, d.Signer, e.Comment
	if e.PR != 0 {
		a.PR = e.PR
	}
	if !e.ExpiresAt.IsZero() {
		a.ExpiresAt = e.ExpiresAt
	}
	if d.Token != "" {
		a.Token = d.Token
	}
	a.Proof = d.Proof
}

// applyBudget folds the global budget's alerts, pauses and resumes.
func (s *State) applyBudget(e *ledger.Event) {
	switch e.Event {
	case ledger.BudgetWarning, ledger.BudgetExceeded:
		if e.Period != "" {
			s.Alerted[AlertKey(e.Period, e.TS, e.Threshold)] = true
		}
	case ledger.BudgetPaused:
		p := &Pause{Period: e.Period, Since: e.TS, Mode: e.Status}
		s.Paused[e.Period+":"+periodOf(e.Period, e.TS)] = p
		if periodOf(e.Period, e.TS) == periodOf(e.Period, s.Now) {
			s.Pauses[e.Period] = p
		}
	case ledger.BudgetResumed:
		delete(s.Pauses, e.Period)
		for k := range s.Paused {
			if strings.HasPrefix(k, e.Period+":") {
				delete(s.Paused, k)
			}
		}
		s.Resumed[e.Period+":"+periodOf(e.Period, e.TS)] = &Resume{Ceiling: e.Limit, Until: e.ExpiresAt}
	}
}

// applySchedule folds a schedule's definition seen, changed or removed.
func (s *State) applySchedule(e *ledger.Event) {
	sc := s.schedule(e.ScheduleID)
	if e.Event == ledger.ScheduleDeleted {
		sc.Deleted = true
		delete(s.Known, e.ScheduleID)
		return
	}
	if e.Event == ledger.ScheduleCreated || sc.CreatedAt.IsZero() {
		sc.CreatedAt = e.TS
	}
	sc.Deleted = false
	switch disabled := e.Status == ledger.StatusDisabled; {
	case disabled && !sc.Disabled:
		sc.Disabled, sc.DisabledAt = true, e.TS
	case !disabled:
		sc.Disabled, sc.DisabledAt = false, time.Time{}
	}
	var d struct {
		Settings map[string]string `json:"settings"`
	}
	if json.Unmarshal(e.Detail, &d) == nil && d.Settings != nil {
		sc.Settings = &Settings{Fields: d.Settings}
	}
	s.Known[e.ScheduleID] = e.PayloadHash
}

// addSpend adds a run's cost to its day and month, and to Spend when
// they are Now's. Sums saturate (money.USD.Add, ledger.AddCount): no
// ledger, however hostile its usage lines, makes a period's spend wrap
// around to "money left".
func (s *State) addSpend(e *ledger.Event) {
	if e.Usage.IsZero() {
		return
	}
	d := s.day(e.TS)
	s.DaySpend[d] = s.DaySpend[d].add(e.Usage)
	m := d[:len("2006-01")]
	s.MonthSpend[m] = s.MonthSpend[m].add(e.Usage)
	if !sameMonth(e.TS, s.Now) {
		return
	}
	s.Spend.Month = s.Spend.Month.Add(e.Usage.Cost)
	s.Spend.MonthTokens = ledger.AddCount(s.Spend.MonthTokens, e.Usage.Tokens)
	if dayIndex(e.TS) == dayIndex(s.Now) {
		s.Spend.Day = s.Spend.Day.Add(e.Usage.Cost)
		s.Spend.DayTokens = ledger.AddCount(s.Spend.DayTokens, e.Usage.Tokens)
	}
}

// addRun remembers a run start of actor for rate limits, forgetting the
// actor's run starts older than runKeep before the newest.
func (s *State) addRun(actor string, ts time.Time) {
	if ts.After(s.latestRun) {
		s.latestRun = ts
	}
	runs := s.ActorRuns[actor]
	cut := s.latestRun.Add(-runKeep)
	i := 0
	for i < len(runs) && !runs[i].After(cut) {
		i++
	}
	s.ActorRuns[actor] = append(runs[i:], ts)
}

// view sets Now and what is seen from it (Spend, Pauses) from what the
// state knows of every period; derived indexes are rebuilt too. A state
// loaded from a snapshot is a state replayed at another time until then.
func (s *State) view(now time.Time) {
	s.Now = now.UTC()
	d, m := s.DaySpend[Day(s.Now)], s.MonthSpend[month(s.Now)]
	s.Spend = Spend{Day: d.USD, DayTokens: d.Tokens, Month: m.USD, MonthTokens: m.Tokens}
	s.Pauses = map[string]*Pause{}
	for k, p := range s.Paused {
		if k == p.Period+":"+periodOf(p.Period, s.Now) {
			s.Pauses[p.Period] = p
		}
	}
	s.claims, s.reservedDay, s.reservedMonth = nil, nil, nil
	for _, o := range s.Open {
		s.countClaim(o, 1)
		s.reserve(o, 1)
	}
	s.latestRun = time.Time{}
	for _, runs := range s.ActorRuns {
		for _, t := range runs {
			if t.After(s.latestRun) {
				s.latestRun = t
			}
		}
	}
	s.dayIdx, s.dayStr = 0, ""
}

// checkpointPart bounds the detail of one checkpoint event, far below
// ledger.MaxLine: dead letters pile up until someone releases them, so what
// a month carries forward has no bound of its own.
const checkpointPart = 1 << 20

// Checkpoint is the ledger.checkpoint event that opens a new month: it
// carries forward what replay of that month alone could not know, so that
// replay reads one month, not the whole history. A state larger than one
// event holds is spread over more, each with status continued, whose
// entries replay adds to the first one's.
func (s *State) Checkpoint(ts time.Time) []*ledger.Event {
	snap := s.snapshot
	snap.Done = map[string]time.Time{}
	for k, t := range s.Done {
		if ts.Sub(t) < KeyRetention {
			snap.Done[k] = t
		}
	}
	snap.Consumed, snap.Reported, snap.Signatures = unexpired(s.Consumed, ts), unexpired(s.Reported, ts), unexpired(s.Signatures, ts)
	snap.RolledBack = map[string]time.Time{}
	for run, at := range s.RolledBack {
		if ts.Sub(at) < RollbackWindow {
			snap.RolledBack[run] = at
		}
	}
	snap.Early = map[string]time.Time{}
	for k, slot := range s.Early {
		if sc := s.Schedules[idOf(k)]; sc == nil || slot.After(sc.LastSlot) {
			snap.Early[k] = slot // still ahead of its schedule: not decided again yet
		}
	}
	snap.Breached = map[string]*Breach{}
	for seq, b := range s.Breached {
		if !b.Reported { // a reported one's event is not replayed again
			snap.Breached[seq] = b
		}
	}
	snap.ActorRuns = map[string][]time.Time{}
	for a, runs := range s.ActorRuns {
		for _, t := range runs {
			if ts.Sub(t) < rateWindow {
				snap.ActorRuns[a] = append(snap.ActorRuns[a], t)
			}
		}
	}
	var evs []*ledger.Event
	for i, detail := range splitSnapshot(&snap, checkpointPart) {
		e := &ledger.Event{TS: ts, Event: ledger.LedgerCheckpoint, Status: ledger.StatusOK, Detail: detail}
		if i > 0 {
			e.Status = ledger.StatusContinued
		}
		evs = append(evs, e)
	}
	return evs
}

// splitSnapshot encodes snap as JSON objects of its shape of at most
// limit bytes each (unless one entry alone is larger), splitting its maps
// between them, in a stable order.
func splitSnapshot(snap *snapshot, limit int) []json.RawMessage {
	whole, err := json.Marshal(snap)
	if err != nil {
		panic(err) // plain data only
	}
	if len(whole) <= limit {
		return []json.RawMessage{whole}
	}
	var fields map[string]map[string]json.RawMessage // every field of snapshot is a map with string keys
	if err := json.Unmarshal(whole, &fields); err != nil {
		panic(err)
	}
	var parts []json.RawMessage
	part, size := map[string]map[string]json.RawMessage{}, 2
	flush := func() {
		b, err := json.Marshal(part)
		if err != nil {
			panic(err)
		}
		parts = append(parts, b)
		part, size = map[string]map[string]json.RawMessage{}, 2
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		for _, key := range slices.Sorted(maps.Keys(fields[name])) {
			val := fields[name][key]
			k, _ := json.Marshal(key)  // as written: escapes make a free-text key longer
			n := len(k) + len(val) + 2 // colon, comma
			if size+n > limit && size > 2 {
				flush()
			}
			if part[name] == nil {
				part[name] = map[string]json.RawMessage{}
				size += len(name) + 4
			}
			part[name][key] = val
			size += n
		}
	}
	if size > 2 || len(parts) == 0 {
		flush()
	}
	return parts
}

// unexpired keeps the token ids that could still be presented at ts: an
// expired token is refused anyway, so it need not be remembered.
func unexpired(m map[string]time.Time, ts time.Time) map[string]time.Time {
	out := map[string]time.Time{}
	for k, exp := range m {
		if exp.IsZero() || exp.After(ts) {
			out[k] = exp
		}
	}
	return out
}

// restore starts the state over from a checkpoint, as a replay that
// begins there would: only what the checkpoint carries is kept, and the
// checkpoint is the first event counted.
func (s *State) restore(detail []byte) {
	var snap snapshot
	if json.Unmarshal(detail, &snap) != nil {
		return // a checkpoint we cannot read leaves the replayed state as is
	}
	fresh := New(s.Now)
	fresh.Events = 1
	fresh.add(&snap)
	fresh.decided = s.decided
	*s = *fresh
}

// merge adds what a continued checkpoint carries.
func (s *State) merge(detail []byte) {
	var snap snapshot
	if json.Unmarshal(detail, &snap) != nil {
		return
	}
	s.deadSaved = ""
	s.add(&snap)
}

func (s *State) add(snap *snapshot) {
	maps.Copy(s.Schedules, snap.Schedules)
	for k, o := range snap.Open {
		s.putOpen(k, o)
	}
	maps.Copy(s.Done, snap.Done)
	maps.Copy(s.DeadLetters, snap.DeadLetters)
	maps.Copy(s.Approvals, snap.Approvals)
	maps.Copy(s.Consumed, snap.Consumed)
	maps.Copy(s.Reported, snap.Reported)
	maps.Copy(s.Signatures, snap.Signatures)
	maps.Copy(s.Granted, snap.Granted)
	maps.Copy(s.RolledBack, snap.RolledBack)
	maps.Copy(s.Known, snap.Known)
	maps.Copy(s.ActorRuns, snap.ActorRuns)
	maps.Copy(s.Early, snap.Early)
	maps.Copy(s.Tampered, snap.Tampered)
	maps.Copy(s.Breached, snap.Breached)
	if snap.Stopped != nil {
		s.Stopped = snap.Stopped
	}
	if t := snap.LastTick; t != nil && (s.LastTick == nil || t.At.After(s.LastTick.At)) {
		s.LastTick = t
	}
	s.view(s.Now) // the newest run start
}
