package sched

import "time"

// Answer is the request fast path: what a new request for m gets at once, without a plan, decided
// over the same snapshot types as Plan (views: the running models; queued: whether any request
// waits). Its step is one of:
//
//  1. its settings refuse its loads and it has no process: the request fails (OpFail, FailRefused);
//  2. loaded, not draining and not removed: a lease (OpAdmit);
//  3. sleeping, not draining and not removed, nothing queued (a wake takes memory: with requests
//     queued it takes its place in line, and Plan wakes it in turn) and its wake fits: woken, with
//     a lease (OpWake);
//  4. its last load failed and the retry backoff has not passed: the request fails (OpFail,
//     FailBackoff);
//  5. else it is queued (OpWait), and Plan decides.
func Answer(m Model, views []Model, room Room, queued bool, now time.Time) Step {
	serves := !m.Draining && !m.Removed
	switch {
	case m.Refused && m.Phase > Stopping: // 1
		return Step{Op: OpFail, Model: m.ID, Why: FailRefused}
	case serves && m.Phase == Loaded: // 2
		return Step{Op: OpAdmit, Model: m.ID}
	case serves && m.Phase == Sleeping && !queued && Fit(views, m.Need.Sub(m.Held), room, m.ID).Start: // 3
		return Step{Op: OpWake, Model: m.ID}
	case m.Phase == Failed && now.Before(m.RetryAt): // 4
		return Step{Op: OpFail, Model: m.ID, Why: FailBackoff}
	}
	return Step{Op: OpWait, Model: m.ID} // 5
}

// Settled says whether a lease just taken or given back on m (its snapshot after the change) calls
// for no new plan, so that the request path need not run Plan: m is loaded and still leased, no
// request is queued (a waiter's reason, and how long the models it waits for have been busy, are
// Plan's to update: the fair wait counts from there), and m is neither draining nor removed (Plan
// stops those once their last lease goes). The last lease given back makes m idle, which Plan must
// see: an idle model may be evicted, and gets its idle timer.
func Settled(m Model, queued bool) bool {
	return m.Phase == Loaded && m.Leases > 0 && !queued && !m.Draining && !m.Removed
}

// Deadline is what a waiting request's queue deadline does when it passes (Expire).
type Deadline int

// The outcomes of a queue deadline.
const (
	DeadlineTimeOut Deadline = iota // the request fails, naming why it waited
	DeadlineLate                    // it stays: its model's load answers it (Plan step 1 times it out if the load ends without it)
	DeadlineExtend                  // it stays FairWait more: it waits its turn (Wait.Turn) while others are served
)

// Expire decides for a request for m whose queue deadline passed; turn is whether m's wait is a Turn
// (the plan's own steps end it). The deadline is for waiting on memory or a slot that nothing the
// router does would free: a request whose model is loading is answered by the load (which has its
// own timeout); one that waits its turn gets fair_wait more (when it is on), as often as it takes,
// so no request fails for having waited while others were served.
func Expire(m Model, turn bool, fairWait time.Duration) Deadline {
	switch {
	case m.Phase == Loading:
		return DeadlineLate
	case turn && fairWait > 0:
		return DeadlineExtend
	}
	return DeadlineTimeOut
}
