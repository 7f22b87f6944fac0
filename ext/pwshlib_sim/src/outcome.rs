//! What the simulated host does with one execute request.

pub enum Outcome {
    Reply {
        stdout: Option<String>,
        stderr: String,
        exitcode: i32,
        errormessage: Option<String>,
    },
    Sleep {
        millis: u64,
        then: Box<Outcome>,
    },
    HangForever,
    Crash,
}
