package main

import "sync"

// intervals is the time series of docs/drivers.md section 4.4: counts and a latency histogram
// per interval of CLOCK_MONOTONIC, interval k spanning [k*width, (k+1)*width).  An event costs a
// compare and a counter under the mutex (the loop counts sends, the client's goroutines acks);
// once per width the interval is closed: its histogram's summary taken, a new histogram started
// (no allocation per record).  A stall needs no timer: the next event, or finish, closes the
// intervals it skipped, empty.
type intervals struct {
	mu                          sync.Mutex
	width, start, next, wallOff int64
	count, bytes, acked, failed int64
	cur                         *Histogram
	rows                        []any
}

// newIntervals is a series from start with intervals of width ns; nil when width <= 0 (none).
func newIntervals(width, start int64) *intervals {
	if width <= 0 {
		return nil
	}
	next := (start/width + 1) * width
	return &intervals{width: width, start: start, next: next, wallOff: wallNs() - mono(), cur: NewHistogram()}
}

func (iv *intervals) at(now int64) {
	for now >= iv.next {
		iv.close(iv.next)
		iv.next += iv.width
	}
}

func (iv *intervals) close(end int64) {
	iv.rows = append(iv.rows, map[string]any{
		"start_mono_ns": iv.start, "end_mono_ns": end, "start_wall_ns": iv.start + iv.wallOff,
		"count": iv.count, "acked": iv.acked, "failed": iv.failed, "bytes": iv.bytes,
		"latency": iv.cur.Summary(),
	})
	iv.cur = NewHistogram()
	iv.count, iv.bytes, iv.acked, iv.failed = 0, 0, 0, 0
	iv.start = end
}

// counted is a message sent (producer) or a record read (consumer) at now, of b value bytes.
func (iv *intervals) counted(now, b int64) {
	iv.mu.Lock()
	iv.at(now)
	iv.count++
	iv.bytes += b
	iv.mu.Unlock()
}

// latency records ns at now (an acknowledgement's when ack, else a sampled record's e2e).
func (iv *intervals) latency(now, ns int64, ack bool) {
	iv.mu.Lock()
	iv.at(now)
	if ack {
		iv.acked++
	}
	iv.cur.Record(ns)
	iv.mu.Unlock()
}

// failedAt counts n failed deliveries reported at now.
func (iv *intervals) failedAt(now, n int64) {
	iv.mu.Lock()
	iv.at(now)
	iv.failed += n
	iv.mu.Unlock()
}

// finish closes every interval up to end and the current one, cut at end: the list of section 4.4.
func (iv *intervals) finish(end int64) []any {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	iv.at(end)
	if end > iv.start {
		iv.close(end)
	}
	return iv.rows
}
