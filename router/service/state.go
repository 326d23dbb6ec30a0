package service

import (
	"path/filepath"

	"github.com/llamatray/llamatray/router/activity"
	"github.com/llamatray/llamatray/router/config"
)

// stateDir is the folder the service keeps its state in (downloads, lending's identity, the last
// hour's activity); "" when there is none.
func stateDir() string {
	d, err := config.StateDir()
	if err != nil {
		return ""
	}
	return d
}

// activityFile keeps the last hour's activity across restarts; "" without a state folder.
func activityFile() string {
	if d := stateDir(); d != "" {
		return filepath.Join(d, activity.FileName)
	}
	return ""
}

// loadActivity adds the last hour before a restart to the activity shown.
func (s *Service) loadActivity() {
	if err := s.activity.Load(activityFile()); err != nil {
		s.log.Warn("the activity before the restart is lost", "err", err)
	}
}

// keepActivity saves the last hour's activity for the next start.
func (s *Service) keepActivity() {
	if path := activityFile(); path != "" {
		if err := s.activity.Save(path); err != nil {
			s.log.Warn("the last hour's activity is not kept for the next start", "err", err)
		}
	}
}
