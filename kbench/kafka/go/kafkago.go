package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
	kafka "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// kafkaGoBackend drives segmentio/kafka-go: a kafka.Writer in async mode with a Completion
// callback (producer) and one kafka.Reader per partition (consumer).  Properties are the
// Writer's and ReaderConfig's field names (docs/drivers.md section 2.1).
type kafkaGoBackend struct{}

const kafkaGoModule = "github.com/segmentio/kafka-go"

var kafkaGoProducerProps = map[string]bool{
	"bootstrap.servers": true, "Compression": true, "CompressionLevel": true, "BatchSize": true,
	"BatchBytes": true, "BatchTimeout": true, "RequiredAcks": true, "MaxAttempts": true,
	"ReadTimeout": true, "WriteTimeout": true, "Balancer": true,
}

var kafkaGoConsumerProps = map[string]bool{
	"bootstrap.servers": true, "group.id": true, "MinBytes": true, "MaxBytes": true, "MaxWait": true,
	"QueueCapacity": true,
}

// maxInflight bounds the messages handed to the async Writer and not yet reported: kafka-go's
// async mode has no bound of its own (WriteMessages never blocks), so a saturated loop would
// grow its queue without end.  100,000 is librdkafka's queue.buffering.max.messages default.
const maxInflight = 100000

func (kafkaGoBackend) info() map[string]any {
	// The defaults: an unconfigured Writer's fields as its Stats() reports them, resolved the way
	// the Writer resolves a zero field (batchSize() 100, batchBytes() 1048576, batchTimeout() 1s,
	// maxAttempts() 10, read/writeTimeout() 10s; RequiredAcks and Compression are taken as they
	// are: 0 = RequireNone and no compression).
	zero := &kafka.Writer{}
	return map[string]any{
		"library": "segmentio/kafka-go",
		"version": moduleVersion(kafkaGoModule),
		"codecs": map[string]string{
			"zstd": "github.com/klauspost/compress " + moduleVersion("github.com/klauspost/compress"),
			"lz4":  "github.com/pierrec/lz4/v4 " + moduleVersion("github.com/pierrec/lz4/v4"),
			"gzip": "github.com/klauspost/compress/gzip", "snappy": "github.com/klauspost/compress/s2 (snappy)",
		},
		"defaults": kafkaGoSettings(zero),
	}
}

// kafkaGoSettings are a Writer's settings in its field names, zero fields resolved to the
// value the Writer uses for them.
func kafkaGoSettings(w *kafka.Writer) map[string]any {
	s := w.Stats() // the raw fields (Stats resets counters; none are counted before the first write)
	or := func(v, def int64) int64 {
		if v > 0 {
			return v
		}
		return def
	}
	dur := func(v, def time.Duration) string {
		if v > 0 {
			return v.String()
		}
		return def.String()
	}
	bal := "RoundRobin (a nil Writer.Balancer)"
	if t, ok := w.Balancer.(*tracker); ok {
		bal = fmt.Sprintf("%T", t.inner)
	}
	codec := w.Compression.String()
	level := "none"
	switch w.Compression {
	case kafka.Gzip:
		level = fmt.Sprintf("%d (compress.GzipCodec.Level; 0 = gzip.DefaultCompression)", compress.GzipCodec.Level)
	case kafka.Zstd:
		lv := compress.ZstdCodec.Level
		if lv == 0 {
			lv = 3 // compress/zstd: "Default to 3"
		}
		level = fmt.Sprintf("%d (klauspost encoder level %s)", lv, zstd.EncoderLevelFromZstd(lv))
	}
	return map[string]any{
		"Compression":      codec,
		"CompressionLevel": level,
		"BatchSize":        or(s.MaxBatchSize, 100),
		"BatchBytes":       or(w.BatchBytes, 1048576),
		"BatchTimeout":     dur(s.BatchTimeout, time.Second),
		"RequiredAcks":     s.RequiredAcks,
		"MaxAttempts":      or(s.MaxAttempts, 10),
		"ReadTimeout":      dur(s.ReadTimeout, 10*time.Second),
		"WriteTimeout":     dur(s.WriteTimeout, 10*time.Second),
		"Async":            s.Async,
		"Balancer":         bal,
	}
}

// countingConn counts the bytes written to a broker: client_stats.wire_bytes.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

func countingTransport(n *atomic.Int64, dialTimeout time.Duration) *kafka.Transport {
	d := &net.Dialer{Timeout: dialTimeout}
	return &kafka.Transport{
		DialTimeout: dialTimeout,
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := d.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{c, n}, nil
		},
	}
}

// topicPartitions reads the topic's partitions: the topic must exist.
func kafkaGoPartitions(addrs []string, topic string, timeout time.Duration, tr kafka.RoundTripper) ([]int, error) {
	cl := &kafka.Client{Addr: kafka.TCP(addrs...), Timeout: timeout, Transport: tr}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	md, err := cl.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, fmt.Errorf("cannot read the metadata of topic '%s' from %v: %v", topic, addrs, err)
	}
	for _, t := range md.Topics {
		if t.Name == topic && t.Error == nil && len(t.Partitions) > 0 {
			ps := make([]int, len(t.Partitions))
			for i, p := range t.Partitions {
				ps[i] = p.ID
			}
			return ps, nil
		}
	}
	return nil, fmt.Errorf("topic '%s' not available; create it first", topic)
}

type pending struct{ seq, sent, due int64 }

// fifo is one partition's messages in the order the Writer batches them: kafka-go writes a
// partition's batches one at a time, in order, and reports each batch whole to Completion.
type fifo struct{ q []pending }

// tracker is the Balancer the Writer calls once per message, in WriteMessages: it asks the
// client's balancer (or the job's fixed partition) and queues the message's times on that
// partition before the Writer can report it.
type tracker struct {
	inner kafka.Balancer
	fixed int
	cur   pending
	mu    sync.Mutex
	parts map[int]*fifo
}

func (t *tracker) Balance(msg kafka.Message, partitions ...int) int {
	p := t.fixed
	if p < 0 {
		p = t.inner.Balance(msg, partitions...)
	}
	t.mu.Lock()
	f := t.parts[p]
	if f == nil {
		f = &fifo{}
		t.parts[p] = f
	}
	f.q = append(f.q, t.cur)
	t.mu.Unlock()
	return p
}

// take removes the reported batch from its partition's queue.  Each message carries its sequence
// number in HighWaterMark, a field the Writer neither sends nor sets; the batch's partition is the
// one whose queue starts with the first of them (the Writer sets Partition only from a produce
// response).
func (t *tracker) take(msgs []kafka.Message) ([]pending, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	first := msgs[0].HighWaterMark
	f := t.parts[msgs[0].Partition]
	if f == nil || len(f.q) == 0 || f.q[0].seq != first {
		// an error report, or acks = 0 (no produce response, so no partition set): the partition
		// is the one whose queue starts with the batch's first sequence number
		f = nil
		for _, g := range t.parts {
			if len(g.q) > 0 && g.q[0].seq == first {
				f = g
				break
			}
		}
	}
	if f == nil || len(f.q) < len(msgs) {
		return nil, false
	}
	out := make([]pending, len(msgs))
	copy(out, f.q[:len(msgs)])
	f.q = f.q[len(msgs):]
	if len(f.q) == 0 {
		f.q = f.q[:0:0] // let the backing array go
	}
	for i := range msgs {
		if out[i].seq != msgs[i].HighWaterMark {
			return out, false
		}
	}
	return out, true
}

type kafkaGoProducer struct {
	w        *kafka.Writer
	t        *tracker
	inflight chan struct{}
	wire     atomic.Int64
	cfg      map[string]any
	stat     kafka.WriterStats
}

func balancerFor(name string) (kafka.Balancer, error) {
	switch name {
	case "", "round-robin", "RoundRobin":
		return &kafka.RoundRobin{}, nil
	case "hash", "Hash":
		return &kafka.Hash{}, nil
	case "reference-hash", "ReferenceHash":
		return &kafka.ReferenceHash{}, nil
	case "murmur2", "Murmur2Balancer":
		return kafka.Murmur2Balancer{}, nil
	case "crc32", "CRC32Balancer":
		return kafka.CRC32Balancer{}, nil
	case "least-bytes", "LeastBytes":
		return &kafka.LeastBytes{}, nil
	}
	return nil, fmt.Errorf("property Balancer: '%s' is unknown; use RoundRobin, Hash, ReferenceHash, Murmur2Balancer, CRC32Balancer or LeastBytes", name)
}

func (kafkaGoBackend) newProducer(j job, props map[string]string, a *acks) (producer, error) {
	if err := checkProps("kafka-go", props, union(kafkaGoProducerProps, kafkaGoConsumerProps)); err != nil {
		return nil, err
	}
	addrs, err := brokers(props)
	if err != nil {
		return nil, err
	}
	timeout := time.Duration(j.num("connect_timeout", 10) * 1e9)
	p := &kafkaGoProducer{inflight: make(chan struct{}, maxInflight), cfg: map[string]any{}}
	inner, err := balancerFor(props["Balancer"])
	if err != nil {
		return nil, err
	}
	p.t = &tracker{inner: inner, fixed: int(j.int("partition", -1)), parts: map[int]*fifo{}}
	w := &kafka.Writer{
		Addr: kafka.TCP(addrs...), Topic: j.str("topic", ""), Balancer: p.t, Async: true,
		Transport: countingTransport(&p.wire, timeout),
	}
	if v, ok := props["Compression"]; ok {
		var c kafka.Compression
		if v != "none" {
			if err := c.UnmarshalText([]byte(v)); err != nil {
				return nil, fmt.Errorf("property Compression: %v", err)
			}
		}
		w.Compression = c
	}
	if lv, ok, err := propInt(props, "CompressionLevel"); err != nil {
		return nil, err
	} else if ok {
		codec := w.Compression.String()
		if w.Compression == 0 {
			codec = "none"
		}
		if err := codecLevel("kafka-go", codec, lv); err != nil {
			return nil, err
		}
		// kafka-go's level lives on its global codec (compress.GzipCodec / compress.ZstdCodec)
		switch w.Compression {
		case kafka.Gzip:
			compress.GzipCodec.Level = int(lv)
		case kafka.Zstd:
			compress.ZstdCodec.Level = int(lv)
		}
	}
	for _, k := range []string{"BatchSize", "MaxAttempts"} {
		if v, ok, err := propInt(props, k); err != nil {
			return nil, err
		} else if ok {
			if v < 1 {
				return nil, fmt.Errorf("property %s: must be >= 1 (kafka-go takes 0 as its default)", k)
			}
			if k == "BatchSize" {
				w.BatchSize = int(v)
			} else {
				w.MaxAttempts = int(v)
			}
		}
	}
	if v, ok, err := propInt(props, "BatchBytes"); err != nil {
		return nil, err
	} else if ok {
		if v < 1 {
			return nil, fmt.Errorf("property BatchBytes: must be >= 1 (kafka-go takes 0 as its default)")
		}
		w.BatchBytes = v
	}
	for _, k := range []string{"BatchTimeout", "ReadTimeout", "WriteTimeout"} {
		d, ok, err := propDuration(props, k)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if d <= 0 {
			return nil, fmt.Errorf("property %s: must be > 0 (kafka-go takes 0 as its default, 1s for BatchTimeout); use 1ns for no wait", k)
		}
		switch k {
		case "BatchTimeout":
			w.BatchTimeout = d
		case "ReadTimeout":
			w.ReadTimeout = d
		default:
			w.WriteTimeout = d
		}
	}
	if v, ok := props["RequiredAcks"]; ok {
		n, err := acksValue("RequiredAcks", v)
		if err != nil {
			return nil, err
		}
		w.RequiredAcks = kafka.RequiredAcks(n)
	}
	w.Completion = func(msgs []kafka.Message, err error) {
		now := mono()
		if len(msgs) == 0 {
			return
		}
		ps, ok := p.t.take(msgs)
		for i := range msgs {
			<-p.inflight
			switch {
			case err != nil:
				a.fail(errName(err), 1)
			case !ok || i >= len(ps):
				a.fail("driver: a delivery report out of send order", 1)
			default:
				a.ok(now, ps[i].sent, ps[i].due)
			}
		}
	}
	ps, err := kafkaGoPartitions(addrs, w.Topic, timeout, w.Transport)
	if err != nil {
		return nil, err
	}
	p.w = w
	for k, v := range kafkaGoSettings(w) {
		p.cfg[k] = v
	}
	p.cfg["driver max in-flight messages"] = maxInflight
	p.cfg["partitions"] = len(ps)
	return p, nil
}

func (p *kafkaGoProducer) send(seq int64, key, value, kb []byte, sentNs, dueNs int64) error {
	m := kafka.Message{Key: key, Value: value, HighWaterMark: seq}
	if kb != nil {
		m.Headers = []kafka.Header{{Key: "kb", Value: kb}}
	}
	p.inflight <- struct{}{} // back-pressure: at most maxInflight unreported messages
	p.t.cur = pending{seq: seq, sent: sentNs, due: dueNs}
	if err := p.w.WriteMessages(context.Background(), m); err != nil {
		<-p.inflight
		return err
	}
	return nil
}

func (p *kafkaGoProducer) flush(timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- p.w.Close() }() // Close writes the open batches and waits for them
	if os.Getenv("KBENCH_GO_DEBUG") != "" {
		// a slow flush's goroutines, on stderr (the runner keeps it in a file)
		t := time.AfterFunc(500*time.Millisecond, func() { _ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 2) })
		defer t.Stop()
	}
	select {
	case err := <-done:
		p.stat = p.w.Stats()
		return err
	case <-time.After(timeout):
		p.stat = p.w.Stats()
		return fmt.Errorf("kafka-go: Writer.Close did not return within %s", timeout)
	}
}

func (p *kafkaGoProducer) stats() map[string]any {
	s := p.stat
	return map[string]any{
		"wire_bytes": p.wire.Load(), // every byte written to the brokers' connections
		"batch_fill": nil,
		"raw": map[string]any{
			"writes": s.Writes, "messages": s.Messages, "message_bytes": s.Bytes, "errors": s.Errors,
			"batch_size_avg": s.BatchSize.Avg, "batch_size_min": s.BatchSize.Min, "batch_size_max": s.BatchSize.Max,
			"batch_bytes_avg": s.BatchBytes.Avg, "batch_bytes_min": s.BatchBytes.Min, "batch_bytes_max": s.BatchBytes.Max,
			"retries_avg": s.Retries.Avg, "write_time_avg_s": s.WriteTime.Avg.Seconds(),
			"wait_time_avg_s": s.WaitTime.Avg.Seconds(), "batch_time_avg_s": s.BatchTime.Avg.Seconds(), "dials": s.Dials,
		},
	}
}

func (p *kafkaGoProducer) config() map[string]any { return p.cfg }

// kafkaGoHighWatermarks lists every partition's end offset, retrying while the cluster reports a
// temporary error (a topic created a moment ago has no leader yet) until the connect timeout.
func kafkaGoHighWatermarks(addrs []string, topic string, req *kafka.ListOffsetsRequest, timeout time.Duration) (map[int]int64, error) {
	cl := &kafka.Client{Addr: kafka.TCP(addrs...), Timeout: timeout}
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		res, err := cl.ListOffsets(ctx, req)
		cancel()
		if err == nil {
			hw := map[int]int64{}
			for _, po := range res.Topics[topic] {
				if po.Error != nil {
					err = fmt.Errorf("cannot list the offset of %s partition %d: %v", topic, po.Partition, po.Error)
					break
				}
				hw[po.Partition] = po.LastOffset
			}
			if err == nil {
				return hw, nil
			}
		} else {
			err = fmt.Errorf("cannot list the offsets of topic '%s': %v", topic, err)
		}
		if time.Now().After(deadline) {
			return nil, err
		}
		time.Sleep(100 * time.Millisecond) // a retry interval, as a client's metadata backoff
	}
}

type kafkaGoConsumer struct {
	readers []*kafka.Reader
	ch      chan record
	errs    *errCounts
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	cfg     map[string]any
}

func (kafkaGoBackend) newConsumer(j job, props map[string]string) (consumer, error) {
	if err := checkProps("kafka-go", props, union(kafkaGoConsumerProps, kafkaGoProducerProps)); err != nil {
		return nil, err
	}
	addrs, err := brokers(props)
	if err != nil {
		return nil, err
	}
	topic := j.str("topic", "")
	timeout := time.Duration(j.num("connect_timeout", 10) * 1e9)
	ps, err := kafkaGoPartitions(addrs, topic, timeout, nil)
	if err != nil {
		return nil, err
	}
	// the partitions' high watermarks, resolved now (before READY)
	req := &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: {}}}
	for _, p := range ps {
		req.Topics[topic] = append(req.Topics[topic], kafka.LastOffsetOf(p))
	}
	hw, err := kafkaGoHighWatermarks(addrs, topic, req, timeout)
	if err != nil {
		return nil, err
	}
	cfgBase := kafka.ReaderConfig{Brokers: addrs, Topic: topic}
	for _, k := range []string{"MinBytes", "MaxBytes", "QueueCapacity"} {
		if v, ok, err := propInt(props, k); err != nil {
			return nil, err
		} else if ok {
			switch k {
			case "MinBytes":
				cfgBase.MinBytes = int(v)
			case "MaxBytes":
				cfgBase.MaxBytes = int(v)
			default:
				cfgBase.QueueCapacity = int(v)
			}
		}
	}
	if d, ok, err := propDuration(props, "MaxWait"); err != nil {
		return nil, err
	} else if ok {
		cfgBase.MaxWait = d
	}
	c := &kafkaGoConsumer{ch: make(chan record, 4096), errs: newErrCounts(), cfg: map[string]any{}}
	rctx, rcancel := context.WithCancel(context.Background())
	c.cancel = rcancel
	for _, p := range ps {
		off, ok := hw[p]
		if !ok {
			rcancel()
			return nil, fmt.Errorf("no offset for %s partition %d", topic, p)
		}
		rc := cfgBase
		rc.Partition = p
		r := kafka.NewReader(rc)
		if err := r.SetOffset(off); err != nil {
			rcancel()
			return nil, fmt.Errorf("cannot set the offset of %s partition %d: %v", topic, p, err)
		}
		c.readers = append(c.readers, r)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			for {
				m, err := r.ReadMessage(rctx)
				if err != nil {
					if rctx.Err() != nil {
						return
					}
					c.errs.add(errName(err), 1)
					continue
				}
				rec := record{valueLen: len(m.Value)}
				for i := len(m.Headers) - 1; i >= 0; i-- {
					if m.Headers[i].Key == "kb" {
						rec.kb, rec.hasKb = m.Headers[i].Value, true
						break
					}
				}
				select {
				case c.ch <- rec:
				case <-rctx.Done():
					return
				}
			}
		}()
	}
	if len(c.readers) > 0 {
		s := c.readers[0].Stats()
		c.cfg = map[string]any{"MinBytes": s.MinBytes, "MaxBytes": s.MaxBytes, "MaxWait": s.MaxWait.String(),
			"QueueCapacity": s.QueueCapacity, "readers": len(c.readers)}
	}
	return c, nil
}

func (c *kafkaGoConsumer) partitions() int        { return len(c.readers) }
func (c *kafkaGoConsumer) records() <-chan record { return c.ch }
func (c *kafkaGoConsumer) errors() *errCounts     { return c.errs }
func (c *kafkaGoConsumer) config() map[string]any { return c.cfg }
func (c *kafkaGoConsumer) close() {
	c.cancel()
	for _, r := range c.readers {
		_ = r.Close()
	}
	c.wg.Wait()
}
