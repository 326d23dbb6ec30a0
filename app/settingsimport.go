package app

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/llamatray/llamatray/router/config"
)

// The settings window's import of llama-swap's config.yaml, as `llamatray import llama-swap FILE`
// does it (config.Config.ImportLlamaSwap), through the backend's one configuration writer.

// chooseLlamaSwap asks for llama-swap's configuration file and imports it.
func (s *settingsWindow) chooseLlamaSwap() {
	openFile(s.win, nil, func(path string) {
		data, err := os.ReadFile(path)
		if err != nil {
			s.setGeneral(fmt.Sprintf("Nothing was imported: %v", err), true)
			return
		}
		s.importLlamaSwap(path, data)
	}, nil)
}

// importLlamaSwap takes llama-swap's configuration (read from path) into the configuration off the
// UI thread, then says what was left out and why, or the error (nothing changed then). The fields
// the import changed (model folders, unload when idle) are shown anew; other edits stay.
func (s *settingsWindow) importLlamaSwap(path string, data []byte) {
	s.setGeneral("Importing "+path+"…", false)
	go func() {
		var before, after config.Config
		var skipped []string
		err := s.u.b.EditConfig(func(c *config.Config) error {
			out, sk, err := c.ImportLlamaSwap(path, data)
			if err != nil {
				return err
			}
			before, after, skipped = *c, out, sk
			*c = out
			return nil
		})
		s.u.refresh.Kick()
		s.u.onUI(func() { s.imported(path, err, before, after, skipped) })
	}()
}

// imported shows the result of an import.
func (s *settingsWindow) imported(path string, err error, before, after config.Config, skipped []string) {
	if err != nil {
		s.setGeneral("Nothing was imported: "+err.Error(), true)
		return
	}
	old, now := valuesFrom(before, s.autostart.Checked), valuesFrom(after, s.autostart.Checked)
	oldTexts := old.fieldTexts()
	for k, t := range now.fieldTexts() {
		if e := s.entries[k]; e != nil && oldTexts[k] != t {
			e.SetText(t)
		}
	}
	if !slices.Equal(old.ModelDirs, now.ModelDirs) {
		s.dirs = now.ModelDirs
		s.refreshDirs()
	}
	text := "Imported llama-swap's models from " + path + "."
	if len(skipped) > 0 {
		text += " Not carried over:\n• " + strings.Join(skipped, "\n• ")
	}
	s.setGeneral(text, false)
}
