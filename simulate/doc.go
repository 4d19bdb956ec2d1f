// Package simulate runs queue configurations through the real matcher on a
// virtual clock (ARCHITECTURE.md §7.6): the engine's Service takes the
// joins, cancels, accepts and declines of a generated or listed stream,
// the engines of every partition pass on the queue's tick and when woken,
// on the memory pool and the memory record, and the events they publish
// are summed up per config: waits, skill spread, how matches formed,
// tickets expired and cancelled, bots, by hour of the day. The same
// scenario and seed give the same report byte for byte. docs/SIMULATE.md
// describes the scenario, the report and what is not simulated yet.
package simulate
