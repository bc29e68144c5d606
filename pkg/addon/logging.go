package addon

import (
	"fmt"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger builds the process logger: zap, through zapr. Verbosity follows logr: V(n) logs
// when the level allows n (info = 0, debug = 1, a number N = up to V(N)).
func newLogger(level, format string) (logr.Logger, error) {
	var lvl zapcore.Level
	switch level {
	case "debug":
		lvl = zapcore.DebugLevel
	case "info":
		lvl = zapcore.InfoLevel
	case "error":
		lvl = zapcore.ErrorLevel
	default:
		n, err := strconv.Atoi(level)
		if err != nil || n < 0 {
			return logr.Discard(), fmt.Errorf("--log-level: %q is not debug, info, error or a non-negative number", level)
		}
		lvl = zapcore.Level(-n)
	}
	cfg := zap.NewProductionConfig()
	if format == "console" {
		cfg = zap.NewDevelopmentConfig()
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil
	cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder
	cfg.DisableStacktrace = format == "json"
	z, err := cfg.Build()
	if err != nil {
		return logr.Discard(), fmt.Errorf("building logger: %w", err)
	}
	return zapr.NewLogger(z), nil
}
