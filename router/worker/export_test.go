package worker

import "github.com/llamatray/llamatray/router/config"

// validToken says what is wrong with a token, or nil: the rule of [workers.NAME] token.
func validToken(t string) error { return config.CheckWorkerToken(t) }
