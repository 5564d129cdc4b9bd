//! Lines as capacity: each line's sending budget (its policy over its kind's defaults), its
//! health, and who may send next. A send is accepted when it is valid; when it goes is its
//! line's decision: [`pacing::step`] hands the waiting messages of one line to the dispatcher as
//! the budget, the gap and the line's health allow, fair between the organisations that share the
//! line, and says when to look again, so that the pacer sleeps instead of polling.

pub mod budget;
pub mod health;
pub mod pacing;
pub mod signals;
