package releases

import (
	"context"
	"log/slog"
	"os/exec"
)

// clearQuarantine removes macOS's quarantine attribute from everything under dir, so Gatekeeper does
// not stop the unpacked llama-server and its libraries.
func clearQuarantine(ctx context.Context, dir string, log *slog.Logger) {
	if out, err := exec.CommandContext(ctx, "xattr", "-r", "-d", "com.apple.quarantine", dir).CombinedOutput(); err != nil {
		// xattr fails when no file has the attribute, which is the usual case for our own downloads.
		log.Debug("xattr -r -d com.apple.quarantine", "dir", dir, "err", err, "output", string(out))
	}
}
