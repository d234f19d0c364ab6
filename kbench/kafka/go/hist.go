package main

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/bits"
)

// Histogram is kbench's log-linear latency histogram (csrc/core/histogram.h), value for value:
// 2048 sub-buckets per power of two, 0 .. 2^36-1 ns, negative values counted as underflow and
// larger ones as overflow.  Encode writes the KBH1 bytes of docs/drivers.md section 5.2, which
// kbench._native.Histogram.decode reads back.  Not safe for concurrent use: one writer at a time.
type Histogram struct {
	counts    []int64
	total     int64
	underflow int64
	overflow  int64
	min       int64
	max       int64
	sum       float64
}

const (
	histSubBits     = 11
	histSubHalfBits = histSubBits - 1
	histSubHalf     = 1 << histSubHalfBits
	histSubMask     = (1 << histSubBits) - 1
	histMaxBits     = 36
	histMaxNs       = (int64(1) << histMaxBits) - 1
	histBuckets     = histMaxBits - histSubBits + 1
	histLen         = (histBuckets + 1) << histSubHalfBits // 27648
)

func NewHistogram() *Histogram {
	return &Histogram{counts: make([]int64, histLen), min: math.MaxInt64, max: -1}
}

func histIndex(v int64) int {
	pow2ceil := 64 - bits.LeadingZeros64(uint64(v)|histSubMask)
	bucket := pow2ceil - histSubBits
	sub := int(v >> uint(bucket))
	return ((bucket + 1) << histSubHalfBits) + (sub - histSubHalf)
}

func histLowest(i int) int64 {
	bucket := (i >> histSubHalfBits) - 1
	sub := (i & (histSubHalf - 1)) + histSubHalf
	if bucket < 0 {
		sub -= histSubHalf
		bucket = 0
	}
	return int64(sub) << uint(bucket)
}

func histHighest(i int) int64 {
	bucket := (i >> histSubHalfBits) - 1
	if bucket < 0 {
		bucket = 0
	}
	return histLowest(i) + (int64(1) << uint(bucket)) - 1
}

// Record adds one value in ns.
func (h *Histogram) Record(v int64) {
	if v < 0 {
		h.underflow++
		return
	}
	if v > histMaxNs {
		h.overflow++
		return
	}
	h.counts[histIndex(v)]++
	h.total++
	h.sum += float64(v)
	if v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// Percentile is kb_hist_percentile: -1 when empty.
func (h *Histogram) Percentile(p float64) int64 {
	if h.total == 0 {
		return -1
	}
	p = math.Max(0, math.Min(100, p))
	rank := int64(math.Ceil(p / 100.0 * float64(h.total)))
	if rank < 1 {
		rank = 1
	}
	var acc int64
	for i, c := range h.counts {
		acc += c
		if acc >= rank {
			v := histHighest(i)
			if v > h.max {
				v = h.max
			}
			if v < h.min {
				v = h.min
			}
			return v
		}
	}
	return h.max
}

// Encode is the KBH1 encoding: magic, six little-endian 8-byte fields, uint32 n, then n
// (uint32 index, int64 count) in ascending index order.
func (h *Histogram) Encode() []byte {
	nz := 0
	for _, c := range h.counts {
		if c != 0 {
			nz++
		}
	}
	b := make([]byte, 56+12*nz)
	copy(b, "KBH1")
	le := binary.LittleEndian
	le.PutUint64(b[4:], uint64(h.total))
	le.PutUint64(b[12:], uint64(h.underflow))
	le.PutUint64(b[20:], uint64(h.overflow))
	le.PutUint64(b[28:], uint64(h.min))
	le.PutUint64(b[36:], uint64(h.max))
	le.PutUint64(b[44:], math.Float64bits(h.sum))
	le.PutUint32(b[52:], uint32(nz))
	o := 56
	for i, c := range h.counts {
		if c != 0 {
			le.PutUint32(b[o:], uint32(i))
			le.PutUint64(b[o+4:], uint64(c))
			o += 12
		}
	}
	return b
}

func usOrNil(ns int64) any {
	if ns < 0 {
		return nil
	}
	return float64(ns) / 1000.0
}

// Summary is the protocol's histogram object (docs/drivers.md section 5).
func (h *Histogram) Summary() map[string]any {
	m := map[string]any{
		"count":        h.total,
		"out_of_range": h.underflow + h.overflow,
		"p50_us":       usOrNil(h.Percentile(50)),
		"p95_us":       usOrNil(h.Percentile(95)),
		"p99_us":       usOrNil(h.Percentile(99)),
		"p999_us":      usOrNil(h.Percentile(99.9)),
		"max_us":       nil,
		"encoded":      base64.StdEncoding.EncodeToString(h.Encode()),
	}
	if h.total > 0 {
		m["max_us"] = usOrNil(h.max)
	}
	return m
}
