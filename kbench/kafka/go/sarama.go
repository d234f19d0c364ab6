package main

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/klauspost/compress/zstd"
	metrics "github.com/rcrowley/go-metrics"
)

// saramaBackend drives IBM/sarama: an AsyncProducer with Return.Successes (producer) and a
// Consumer with one PartitionConsumer per partition (consumer).  Properties are sarama.Config's
// field paths (Producer.Flush.Bytes, ...; docs/drivers.md section 2.1).
type saramaBackend struct{}

const saramaModule = "github.com/IBM/sarama"

var saramaProducerProps = map[string]bool{
	"bootstrap.servers": true, "Version": true, "ClientID": true, "ChannelBufferSize": true,
	"Net.MaxOpenRequests": true, "Producer.Compression": true, "Producer.CompressionLevel": true,
	"Producer.Flush.Bytes": true, "Producer.Flush.Messages": true, "Producer.Flush.Frequency": true,
	"Producer.Flush.MaxMessages": true, "Producer.RequiredAcks": true, "Producer.MaxMessageBytes": true,
	"Producer.Retry.Max": true, "Producer.Idempotent": true, "Producer.Partitioner": true,
}

var saramaConsumerProps = map[string]bool{
	"bootstrap.servers": true, "group.id": true, "Version": true, "ClientID": true, "ChannelBufferSize": true,
	"Consumer.Fetch.Min": true, "Consumer.Fetch.Default": true, "Consumer.Fetch.Max": true,
	"Consumer.MaxWaitTime": true,
}

func funcName(f any) string {
	if f == nil {
		return "nil"
	}
	n := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	return strings.TrimPrefix(n, saramaModule+".")
}

// saramaSettings are the producer settings of a sarama.Config, in its field paths.
func saramaSettings(c *sarama.Config) map[string]any {
	return map[string]any{
		"Producer.Compression":       c.Producer.Compression.String(),
		"Producer.CompressionLevel":  c.Producer.CompressionLevel,
		"Producer.Flush.Bytes":       c.Producer.Flush.Bytes,
		"Producer.Flush.Messages":    c.Producer.Flush.Messages,
		"Producer.Flush.Frequency":   c.Producer.Flush.Frequency.String(),
		"Producer.Flush.MaxMessages": c.Producer.Flush.MaxMessages,
		"Producer.RequiredAcks":      int(c.Producer.RequiredAcks),
		"Producer.MaxMessageBytes":   c.Producer.MaxMessageBytes,
		"Producer.Retry.Max":         c.Producer.Retry.Max,
		"Producer.Idempotent":        c.Producer.Idempotent,
		"Producer.Partitioner":       funcName(c.Producer.Partitioner),
		"Net.MaxOpenRequests":        c.Net.MaxOpenRequests,
		"ChannelBufferSize":          c.ChannelBufferSize,
		"Version":                    c.Version.String(),
	}
}

func (saramaBackend) info() map[string]any {
	return map[string]any{
		"library": "IBM/sarama",
		"version": moduleVersion(saramaModule),
		"codecs": map[string]string{
			"zstd": "github.com/klauspost/compress " + moduleVersion("github.com/klauspost/compress"),
			"lz4":  "github.com/pierrec/lz4/v4 " + moduleVersion("github.com/pierrec/lz4/v4"),
			"gzip": "github.com/klauspost/compress/gzip", "snappy": "github.com/klauspost/compress/snappy/xerial",
		},
		"defaults": saramaSettings(sarama.NewConfig()), // as sarama.NewConfig() sets them
	}
}

func saramaPartitioner(name string) (sarama.PartitionerConstructor, error) {
	switch name {
	case "", "hash", "NewHashPartitioner":
		return sarama.NewHashPartitioner, nil
	case "random", "NewRandomPartitioner":
		return sarama.NewRandomPartitioner, nil
	case "round-robin", "NewRoundRobinPartitioner":
		return sarama.NewRoundRobinPartitioner, nil
	case "reference-hash", "NewReferenceHashPartitioner":
		return sarama.NewReferenceHashPartitioner, nil
	case "crc32", "NewConsistentCRCHashPartitioner":
		return sarama.NewConsistentCRCHashPartitioner, nil
	}
	return nil, fmt.Errorf("property Producer.Partitioner: '%s' is unknown; use NewHashPartitioner, NewRandomPartitioner, NewRoundRobinPartitioner, NewReferenceHashPartitioner or NewConsistentCRCHashPartitioner", name)
}

// saramaConfig is sarama.NewConfig() with the job's properties applied.
func saramaConfig(j job, props map[string]string, known map[string]bool) (*sarama.Config, []string, error) {
	if err := checkProps("sarama", props, known); err != nil {
		return nil, nil, err
	}
	addrs, err := brokers(props)
	if err != nil {
		return nil, nil, err
	}
	c := sarama.NewConfig()
	timeout := time.Duration(j.num("connect_timeout", 10) * 1e9)
	c.Net.DialTimeout = timeout
	c.Metadata.Retry.Max = int(timeout / c.Metadata.Retry.Backoff)
	c.MetricRegistry = metrics.NewRegistry()
	if v, ok := props["Version"]; ok {
		kv, err := sarama.ParseKafkaVersion(v)
		if err != nil {
			return nil, nil, fmt.Errorf("property Version: %v", err)
		}
		c.Version = kv
	}
	if v, ok := props["ClientID"]; ok {
		c.ClientID = v
	}
	ints := map[string]*int{
		"ChannelBufferSize": &c.ChannelBufferSize, "Net.MaxOpenRequests": &c.Net.MaxOpenRequests,
		"Producer.Flush.Bytes": &c.Producer.Flush.Bytes, "Producer.Flush.Messages": &c.Producer.Flush.Messages,
		"Producer.Flush.MaxMessages": &c.Producer.Flush.MaxMessages, "Producer.MaxMessageBytes": &c.Producer.MaxMessageBytes,
		"Producer.Retry.Max": &c.Producer.Retry.Max, "Producer.CompressionLevel": &c.Producer.CompressionLevel,
	}
	for k, dst := range ints {
		if v, ok, err := propInt(props, k); err != nil {
			return nil, nil, err
		} else if ok {
			*dst = int(v)
		}
	}
	for k, dst := range map[string]*int32{"Consumer.Fetch.Min": &c.Consumer.Fetch.Min,
		"Consumer.Fetch.Default": &c.Consumer.Fetch.Default, "Consumer.Fetch.Max": &c.Consumer.Fetch.Max} {
		if v, ok, err := propInt(props, k); err != nil {
			return nil, nil, err
		} else if ok {
			*dst = int32(v)
		}
	}
	for k, dst := range map[string]*time.Duration{"Producer.Flush.Frequency": &c.Producer.Flush.Frequency,
		"Consumer.MaxWaitTime": &c.Consumer.MaxWaitTime} {
		if d, ok, err := propDuration(props, k); err != nil {
			return nil, nil, err
		} else if ok {
			*dst = d
		}
	}
	if v, ok := props["Producer.Compression"]; ok {
		if err := c.Producer.Compression.UnmarshalText([]byte(v)); err != nil {
			return nil, nil, fmt.Errorf("property Producer.Compression: %v", err)
		}
	}
	if _, ok := props["Producer.CompressionLevel"]; ok {
		if err := codecLevel("sarama", c.Producer.Compression.String(), int64(c.Producer.CompressionLevel)); err != nil {
			return nil, nil, err
		}
	}
	if v, ok := props["Producer.RequiredAcks"]; ok {
		n, err := acksValue("Producer.RequiredAcks", v)
		if err != nil {
			return nil, nil, err
		}
		c.Producer.RequiredAcks = sarama.RequiredAcks(n)
	}
	if b, ok, err := propBool(props, "Producer.Idempotent"); err != nil {
		return nil, nil, err
	} else if ok {
		c.Producer.Idempotent = b
	}
	part, err := saramaPartitioner(props["Producer.Partitioner"])
	if err != nil {
		return nil, nil, err
	}
	c.Producer.Partitioner = part
	return c, addrs, nil
}

func saramaTopic(cl sarama.Client, topic string) ([]int32, error) {
	ps, err := cl.Partitions(topic)
	if err != nil || len(ps) == 0 {
		return nil, fmt.Errorf("topic '%s' not available; create it first (%v)", topic, err)
	}
	return ps, nil
}

type saramaProducer struct {
	cl    sarama.Client
	p     sarama.AsyncProducer
	topic string
	part  int32
	wg    sync.WaitGroup
	reg   metrics.Registry
	cfg   map[string]any
}

func (saramaBackend) newProducer(j job, props map[string]string, a *acks) (producer, error) {
	c, addrs, err := saramaConfig(j, props, union(saramaProducerProps, saramaConsumerProps))
	if err != nil {
		return nil, err
	}
	topic := j.str("topic", "")
	part := int32(j.int("partition", -1))
	if part >= 0 {
		c.Producer.Partitioner = sarama.NewManualPartitioner
	}
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("sarama refuses the configuration: %v", err)
	}
	cl, err := sarama.NewClient(addrs, c)
	if err != nil {
		return nil, fmt.Errorf("cannot reach a broker at %v: %v", addrs, err)
	}
	if _, err := saramaTopic(cl, topic); err != nil {
		cl.Close()
		return nil, err
	}
	ap, err := sarama.NewAsyncProducerFromClient(cl)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("sarama: %v", err)
	}
	p := &saramaProducer{cl: cl, p: ap, topic: topic, part: part, reg: c.MetricRegistry, cfg: saramaSettings(c)}
	if c.Producer.Compression == sarama.CompressionZSTD && c.Producer.CompressionLevel != sarama.CompressionLevelDefault {
		p.cfg["zstd encoder level"] = zstd.EncoderLevelFromZstd(c.Producer.CompressionLevel).String()
	}
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		for m := range ap.Successes() {
			now := mono()
			pd := m.Metadata.(pending)
			a.ok(now, pd.sent, pd.due)
		}
	}()
	go func() {
		defer p.wg.Done()
		for e := range ap.Errors() {
			a.fail(errName(e.Err), 1)
		}
	}()
	return p, nil
}

func (p *saramaProducer) send(seq int64, key, value, kb []byte, sentNs, dueNs int64) error {
	m := &sarama.ProducerMessage{Topic: p.topic, Value: sarama.ByteEncoder(value),
		Metadata: pending{seq: seq, sent: sentNs, due: dueNs}}
	if key != nil {
		m.Key = sarama.ByteEncoder(key)
	}
	if kb != nil {
		m.Headers = []sarama.RecordHeader{{Key: []byte("kb"), Value: kb}}
	}
	if p.part >= 0 {
		m.Partition = p.part
	}
	p.p.Input() <- m // blocks while sarama's input channel is full: its back-pressure
	return nil
}

func (p *saramaProducer) flush(timeout time.Duration) error {
	p.p.AsyncClose() // sends what is buffered, then closes Successes and Errors
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		return fmt.Errorf("sarama: the producer did not drain within %s", timeout)
	}
	return nil
}

// metricValues reads a go-metrics registry: meters and counters by count, histograms by
// count, mean, p50, p90 and max.
func metricValues(reg metrics.Registry) map[string]any {
	out := map[string]any{}
	reg.Each(func(name string, m any) {
		switch x := m.(type) {
		case metrics.Meter:
			out[name] = x.Snapshot().Count()
		case metrics.Counter:
			out[name] = x.Snapshot().Count()
		case metrics.Histogram:
			s := x.Snapshot()
			out[name] = map[string]any{"count": s.Count(), "mean": s.Mean(), "p50": s.Percentile(0.5),
				"p90": s.Percentile(0.9), "max": s.Max()}
		}
	})
	return out
}

func (p *saramaProducer) stats() map[string]any {
	raw := metricValues(p.reg)
	_ = p.cl.Close()
	var wire any
	if v, ok := raw["outgoing-byte-rate"].(int64); ok {
		wire = v // every byte sarama wrote to the brokers
	}
	return map[string]any{"wire_bytes": wire, "batch_fill": nil, "raw": raw}
}

func (p *saramaProducer) config() map[string]any { return p.cfg }

type saramaConsumer struct {
	cl   sarama.Client
	cons sarama.Consumer
	pcs  []sarama.PartitionConsumer
	ch   chan record
	errs *errCounts
	stop chan struct{}
	wg   sync.WaitGroup
	cfg  map[string]any
}

func (saramaBackend) newConsumer(j job, props map[string]string) (consumer, error) {
	c, addrs, err := saramaConfig(j, props, union(saramaConsumerProps, saramaProducerProps))
	if err != nil {
		return nil, err
	}
	c.Consumer.Return.Errors = true
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("sarama refuses the configuration: %v", err)
	}
	topic := j.str("topic", "")
	cl, err := sarama.NewClient(addrs, c)
	if err != nil {
		return nil, fmt.Errorf("cannot reach a broker at %v: %v", addrs, err)
	}
	ps, err := saramaTopic(cl, topic)
	if err != nil {
		cl.Close()
		return nil, err
	}
	cons, err := sarama.NewConsumerFromClient(cl)
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("sarama: %v", err)
	}
	sc := &saramaConsumer{cl: cl, cons: cons, ch: make(chan record, 4096), errs: newErrCounts(), stop: make(chan struct{})}
	for _, p := range ps {
		off, err := cl.GetOffset(topic, p, sarama.OffsetNewest) // the high watermark, before READY
		if err == nil {
			var pc sarama.PartitionConsumer
			pc, err = cons.ConsumePartition(topic, p, off)
			if err == nil {
				sc.pcs = append(sc.pcs, pc)
				sc.pump(pc)
				continue
			}
		}
		sc.close()
		return nil, fmt.Errorf("cannot start consuming %s partition %d: %v", topic, p, err)
	}
	sc.cfg = map[string]any{"Consumer.Fetch.Min": c.Consumer.Fetch.Min, "Consumer.Fetch.Default": c.Consumer.Fetch.Default,
		"Consumer.MaxWaitTime": c.Consumer.MaxWaitTime.String(), "ChannelBufferSize": c.ChannelBufferSize,
		"Version": c.Version.String()}
	return sc, nil
}

func (sc *saramaConsumer) pump(pc sarama.PartitionConsumer) {
	sc.wg.Add(2)
	go func() {
		defer sc.wg.Done()
		for m := range pc.Messages() {
			rec := record{valueLen: len(m.Value)}
			for i := len(m.Headers) - 1; i >= 0; i-- {
				if h := m.Headers[i]; h != nil && string(h.Key) == "kb" {
					rec.kb, rec.hasKb = h.Value, true
					break
				}
			}
			select {
			case sc.ch <- rec:
			case <-sc.stop:
				return
			}
		}
	}()
	go func() {
		defer sc.wg.Done()
		for e := range pc.Errors() {
			sc.errs.add(errName(e.Err), 1)
		}
	}()
}

func (sc *saramaConsumer) partitions() int        { return len(sc.pcs) }
func (sc *saramaConsumer) records() <-chan record { return sc.ch }
func (sc *saramaConsumer) errors() *errCounts     { return sc.errs }
func (sc *saramaConsumer) config() map[string]any { return sc.cfg }
func (sc *saramaConsumer) close() {
	close(sc.stop)
	for _, pc := range sc.pcs {
		pc.AsyncClose()
	}
	sc.wg.Wait()
	_ = sc.cons.Close()
	_ = sc.cl.Close()
}
