package child

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"unsafe"

	"golang.org/x/sys/windows"
)

// configure starts the child without a console window.
func configure(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.CreationFlags |= windows.CREATE_NO_WINDOW
	cmd.SysProcAttr.HideWindow = true
}

// canSignal says the platform can ask a process to stop with a signal: a
// console-less process on Windows gets none.
const canSignal = false

// osProc is the platform handle of a child: on Windows, the process and a Job
// Object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE. Llamatray holds the only
// handle to the job, so when Llamatray dies — however it dies — the handle is
// closed and Windows kills every process in the job.
type osProc struct {
	proc *os.Process
	h    windows.Handle // the process, to terminate it with killedExitCode; 0 if it could not be opened
	job  windows.Handle // 0 when the job could not be set up
}

// killedExitCode is the exit code kill gives the child and anything in its job:
// STATUS_CONTROL_C_EXIT, which Windows also reports for a console program ended by
// Ctrl+C. exitCode reports it as -1, as a process killed by a signal is on unix;
// TerminateProcess's usual 1 could not be told from llama-server failing by itself.
const killedExitCode = 0xC000013A

// exitCode is the exit code of a reaped child, -1 when it was killed.
func exitCode(st *os.ProcessState) int {
	if c := st.ExitCode(); uint32(c) != killedExitCode {
		return c
	}
	return -1
}

// attach puts a started child into its own kill-on-close job. On failure the
// child keeps running without the job (the stdin orphan guard still applies)
// and the error says so.
func attach(cmd *exec.Cmd) (*osProc, error) {
	o := &osProc{proc: cmd.Process}
	h, err := windows.OpenProcess(windows.PROCESS_SET_QUOTA|windows.PROCESS_TERMINATE|windows.PROCESS_QUERY_LIMITED_INFORMATION,
		false, uint32(cmd.Process.Pid))
	if err != nil {
		return o, fmt.Errorf("open process %d: %w", cmd.Process.Pid, err)
	}
	o.h = h
	job, err := windows.CreateJobObject(nil, nil)
	if err != nil {
		return o, fmt.Errorf("create job object: %w", err)
	}
	info := windows.JOBOBJECT_EXTENDED_LIMIT_INFORMATION{
		BasicLimitInformation: windows.JOBOBJECT_BASIC_LIMIT_INFORMATION{
			LimitFlags: windows.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
		},
	}
	if _, err := windows.SetInformationJobObject(job, windows.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		_ = windows.CloseHandle(job)
		return o, fmt.Errorf("set job object limits: %w", err)
	}
	if err := windows.AssignProcessToJobObject(job, h); err != nil {
		_ = windows.CloseHandle(job)
		return o, fmt.Errorf("assign process %d to a job object: %w", cmd.Process.Pid, err)
	}
	o.job = job
	return o, nil
}

// terminate does nothing on Windows: a console-less process gets no signal,
// and the stdin exit command, which the caller writes, is the graceful stop.
func (o *osProc) terminate() error { return nil }

// kill ends the child now with TerminateProcess, and anything it spawned
// through its job, with killedExitCode.
func (o *osProc) kill() error {
	var errs []error
	switch {
	case o.h != 0:
		if err := windows.TerminateProcess(o.h, killedExitCode); err != nil && o.running() {
			errs = append(errs, fmt.Errorf("terminate process %d: %w", o.proc.Pid, err))
		}
	default:
		if err := o.proc.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			errs = append(errs, fmt.Errorf("terminate process %d: %w", o.proc.Pid, err))
		}
	}
	if o.job != 0 {
		if err := windows.TerminateJobObject(o.job, killedExitCode); err != nil {
			errs = append(errs, fmt.Errorf("terminate job object: %w", err))
		}
	}
	return errors.Join(errs...)
}

// running says whether the child has not exited yet (TerminateProcess fails
// with access denied on a process that has).
func (o *osProc) running() bool {
	const stillActive = 259 // STILL_ACTIVE: the exit code of a running process
	var code uint32
	err := windows.GetExitCodeProcess(o.h, &code)
	return err != nil || code == stillActive
}

// release closes the handles after the child was reaped; closing the job's
// also ends anything the child left running.
func (o *osProc) release(bool) {
	if o.job != 0 {
		_ = windows.CloseHandle(o.job)
		o.job = 0
	}
	if o.h != 0 {
		_ = windows.CloseHandle(o.h)
		o.h = 0
	}
}
