// Package report renders what the ledger knows for people: the static
// HTML dashboard (astra report) and the Markdown job summary of a run.
package report

import (
	"sort"
	"time"

	"github.com/astra-gitops/astra/internal/introspect"
	"github.com/astra-gitops/astra/internal/ledger"
	"github.com/astra-gitops/astra/internal/model"
	"github.com/astra-gitops/astra/internal/money"
	"github.com/astra-gitops/astra/internal/state"
)

// Data is everything the dashboard shows, computed from the ledger.
type Data struct {
	Generated     time.Time       `json:"generated"`
	Repository    string          `json:"repository,omitempty"` // owner/repo, for links
	Name          string          `json:"name,omitempty"`       // the repository's name, for the title when Repository is unknown
	ServerURL     string          `json:"server_url,omitempty"` // https://github.com
	Month         string          `json:"month"`                // YYYY-MM
	Spend         []DaySpend      `json:"spend"`                // one entry per day of the month so far
	DayLimitUSD   float64         `json:"day_limit_usd"`
	MonthLimitUSD float64         `json:"month_limit_usd"`
	MonthUSD      float64         `json:"month_usd"`
	Paused        string          `json:"paused,omitempty"`
	LastTick      *state.Tick     `json:"last_tick,omitempty"`     // the newest tick run-due recorded
	LastTickAgo   string          `json:"last_tick_ago,omitempty"` // "12 minutes ago", at Generated
	TickStale     bool            `json:"tick_stale"`              // no tick for longer than an idle repository records one
	Schedules     []ScheduleStats `json:"schedules"`
	Pending       []Pending       `json:"pending"`
	DeadLetters   []DeadLetter    `json:"dead_letters"`
}

// DaySpend is one UTC day's spend.
type DaySpend struct {
	Day    string  `json:"day"` // YYYY-MM-DD
	USD    float64 `json:"usd"`
	Tokens int64   `json:"tokens"`
	Runs   int     `json:"runs"`
}

// ScheduleStats is one schedule's month.
type ScheduleStats struct {
	ID         string    `json:"id"`
	Name       string    `json:"name"`
	Tier       int       `json:"tier"`
	Runs       int       `json:"runs"` // completed
	Failures   int       `json:"failures"`
	Skips      int       `json:"skips"`
	LastStatus string    `json:"last_status,omitempty"`
	LastRun    time.Time `json:"last_run,omitzero"`
	Next       time.Time `json:"next,omitzero"` // next fire time; zero for event schedules
}

// Pending is an open approval request.
type Pending struct {
	ScheduleID  string    `json:"schedule_id"`
	Name        string    `json:"name"`
	Slot        time.Time `json:"slot"`
	PR          int       `json:"pr,omitempty"`
	URL         string    `json:"url,omitempty"`
	RequestedAt time.Time `json:"requested_at"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// DeadLetter is a slot that failed every attempt.
type DeadLetter struct {
	Key      string    `json:"key"`
	Name     string    `json:"name"`
	Attempts int       `json:"attempts"`
	Error    string    `json:"error,omitempty"`
	At       time.Time `json:"at"`
}

// Collect reads the month of now from the ledger, in the same single pass
// that rebuilds the state.
func Collect(cfg *model.Config, store *ledger.Store, now time.Time, repository, serverURL string) (Data, error) {
	now = now.UTC()
	first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	d := Data{Generated: now, Repository: repository, ServerURL: serverURL, Month: ledger.Month(now),
		DayLimitUSD: cfg.Policies.Budget.DailyLimit.Float(), MonthLimitUSD: cfg.Policies.Budget.MonthlyLimit.Float(),
		Schedules: []ScheduleStats{}, Pending: []Pending{}, DeadLetters: []DeadLetter{}}
	for day := first; !day.After(now); day = day.AddDate(0, 0, 1) {
		d.Spend = append(d.Spend, DaySpend{Day: day.Format(time.DateOnly)})
	}
	m := month{first: first, now: now, days: d.Spend, spent: make([]money.USD, len(d.Spend)), stats: make(map[string]*ScheduleStats, len(cfg.Schedules))}
	for _, sc := range cfg.Schedules {
		s := &ScheduleStats{ID: sc.ID, Name: sc.Name, Tier: int(sc.SafetyTier)}
		if sc.Spec != nil && sc.Enabled {
			s.Next = sc.Spec.Next(now)
		}
		m.stats[sc.ID] = s
	}
	st, _, err := state.ReplayEach(store, now, m.add)
	if err != nil {
		return Data{}, err
	}
	for i, u := range m.spent {
		d.Spend[i].USD = u.Float()
	}
	d.MonthUSD = st.Spend.Month.Float()
	status := introspect.StatusOf(cfg, st)
	d.Paused, d.LastTick, d.LastTickAgo, d.TickStale = status.Paused, status.LastTick, status.TickAgo, status.Stale
	for _, sc := range cfg.Schedules {
		d.Schedules = append(d.Schedules, *m.stats[sc.ID])
		if a := st.Approvals[sc.ID]; a != nil {
			p := Pending{ScheduleID: sc.ID, Name: sc.Name, Slot: a.Slot, PR: a.PR, RequestedAt: a.RequestedAt, ExpiresAt: a.ExpiresAt}
			p.URL = introspect.Repository{ServerURL: serverURL, Name: repository}.PullURL(a.PR)
			d.Pending = append(d.Pending, p)
		}
	}
	for key, dl := range st.DeadLetters {
		name := dl.ScheduleID
		if sc := cfg.Schedule(dl.ScheduleID); sc != nil {
			name = sc.Name
		}
		d.DeadLetters = append(d.DeadLetters, DeadLetter{Key: key, Name: name, Attempts: dl.Attempts, Error: dl.Error, At: dl.At})
	}
	sort.Slice(d.DeadLetters, func(i, j int) bool { return d.DeadLetters[i].At.Before(d.DeadLetters[j].At) })
	return d, nil
}

// month tallies the runs of one month, from its first day to now, by
// day and by schedule.
type month struct {
	first, now time.Time
	days       []DaySpend                // one per day so far
	spent      []money.USD               // days' spend, summed exactly, shown as dollars
	stats      map[string]*ScheduleStats // by schedule id
}

// add counts one event of a replay.
func (m *month) add(e *ledger.Event) {
	if e.TS.Before(m.first) || e.TS.After(m.now) {
		return
	}
	status := runStatus(e.Event)
	if status == "" {
		return
	}
	if status != "skipped" {
		i := e.TS.UTC().Day() - 1
		day := &m.days[i]
		m.spent[i] = m.spent[i].Add(e.Usage.Cost)
		day.Tokens = ledger.AddCount(day.Tokens, e.Usage.Tokens)
		day.Runs++
	}
	s := m.stats[e.ScheduleID]
	if s == nil { // a schedule since deleted
		return
	}
	switch status {
	case "completed":
		s.Runs++
	case "failed":
		s.Failures++
	default:
		s.Skips++
	}
	if !e.TS.Before(s.LastRun) {
		s.LastRun, s.LastStatus = e.TS, status
	}
}

// runStatus is the dashboard's status of an event that ends a run or
// skips a slot, "" for any other.
func runStatus(k ledger.Kind) string {
	switch k {
	case ledger.RunCompleted:
		return "completed"
	case ledger.RunFailed:
		return "failed"
	case ledger.RunSkipped:
		return "skipped"
	}
	return ""
}
