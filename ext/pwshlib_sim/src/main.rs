//! `pwshlib-sim`: a stand-in for PowerShell running the pwshlib host script.

fn main() {
    eprintln!("pwshlib-sim: not implemented yet");
    std::process::exit(1);
}
