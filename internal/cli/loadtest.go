package cli

import "errors"

// loadtestCmd is filled in by the load tool.
type loadtestCmd struct{}

func (loadtestCmd) Run(e *env) error { return errors.New("not implemented yet") }
