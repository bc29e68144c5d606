package addon

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// counted is a log value that counts how often it is encoded.
type counted struct{ n *int }

func (c counted) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	*c.n++
	enc.AddString("name", "the-value")
	return nil
}

func TestLazyCoreEncodesFieldsOnlyWhenWritten(t *testing.T) {
	var buf bytes.Buffer
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&buf), zapcore.InfoLevel)
	encoded := 0
	log := zapr.NewLogger(zap.New(lazyCore{core})).WithValues("object", counted{&encoded}).WithValues("other", "x")

	log.V(1).Info("below the level")
	if encoded != 0 || buf.Len() != 0 {
		t.Fatalf("a logger's values were encoded %d times with no line written (output %q)", encoded, buf.String())
	}
	log.Info("written")
	log.Info("written again")
	if encoded != 1 {
		t.Errorf("the value was encoded %d times for two lines of one logger, want once", encoded)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", buf.String())
	}
	for _, line := range lines {
		if !strings.Contains(line, `"object":{"name":"the-value"}`) || !strings.Contains(line, `"other":"x"`) {
			t.Errorf("line %q lacks the logger's values", line)
		}
	}
}

// BenchmarkLoggerWithValues: a reconcile's loggers (controller-runtime's names the controller and
// the object, ReconcileJobSet's the JobSet), no line written, as most reconciles.
func BenchmarkLoggerWithValues(b *testing.B) {
	for name, wrap := range map[string]func(zapcore.Core) zapcore.Core{
		"zap":  func(c zapcore.Core) zapcore.Core { return c },
		"lazy": func(c zapcore.Core) zapcore.Core { return lazyCore{c} },
	} {
		b.Run(name, func(b *testing.B) {
			core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), zapcore.InfoLevel)
			log := zapr.NewLogger(zap.New(wrap(core)))
			ref := klog.KRef("ns", "jobset-1")
			b.ReportAllocs()
			for b.Loop() {
				l := log.WithValues("controller", "podgroups", "namespace", "ns", "name", "jobset-1", "reconcileID", "0b1c2d3e-4f50-6172-8394-a5b6c7d8e9f0")
				l = l.WithValues("jobset", ref)
				l.V(1).Info("Created a PodGroup", "podGroup", "jobset-1")
			}
		})
	}
}

// The process logger is built on lazyCore.
func TestNewLoggerIsLazy(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		log, err := newLogger("info", format)
		if err != nil {
			t.Fatal(err)
		}
		u, ok := log.GetSink().(zapr.Underlier)
		if !ok {
			t.Fatalf("%s: the logger's sink is %T, not zapr's", format, log.GetSink())
		}
		if core := u.GetUnderlying().Core(); core == nil {
			t.Errorf("%s: the logger has no core", format)
		} else if _, ok := core.(lazyCore); !ok {
			t.Errorf("%s: the logger's core is %T, want lazyCore", format, core)
		}
	}
}
